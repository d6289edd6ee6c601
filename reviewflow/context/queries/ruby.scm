; Ruby: methods, classes, modules; calls, constants, `require`.
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method
(class name: (constant) @name) @definition.class
(class name: (scope_resolution name: (_) @name)) @definition.class
(module name: (constant) @name) @definition.module
(module name: (scope_resolution name: (_) @name)) @definition.module

(call receiver: (_) @receiver method: (identifier) @name) @reference.call
(call !receiver method: (identifier) @name) @reference.call
(constant) @name @reference.type
(body_statement (identifier) @name) @reference.call

(call method: (identifier) @_req arguments: (argument_list (string (string_content) @import.module)) (#match? @_req "^require(_relative)?$")) @import
