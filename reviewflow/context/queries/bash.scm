; Shell: functions; commands that call them; `source` and `.` of other files.
(function_definition name: (word) @name) @definition.function

(command name: (command_name (word) @name)) @reference.call

(command name: (command_name (word) @_source) argument: (_) @import.module (#match? @_source "^(source|\\.)$")) @import
