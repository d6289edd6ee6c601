; C: functions (and their prototypes), structs, unions, enums, typedefs, macros; calls,
; function names passed as values (callbacks), types, includes.
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))) @definition.function
(declaration declarator: (function_declarator declarator: (identifier) @name)) @definition.prototype
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.prototype
(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct
(union_specifier name: (type_identifier) @name body: (_)) @definition.struct
(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum
(type_definition declarator: (type_identifier) @name) @definition.type
(preproc_function_def name: (identifier) @name) @definition.macro

(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression argument: (_) @receiver field: (field_identifier) @name)) @reference.call
(type_identifier) @name @reference.type
(argument_list (identifier) @name) @reference.name
(init_declarator value: (identifier) @name) @reference.name
(initializer_pair value: (identifier) @name) @reference.name
(initializer_list (identifier) @name) @reference.name
(assignment_expression right: (identifier) @name) @reference.name
(return_statement (identifier) @name) @reference.name

(preproc_include path: (_) @import.module) @import
