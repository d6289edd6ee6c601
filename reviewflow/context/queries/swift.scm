; Swift: classes, structs, enums, protocols, functions, initializers; calls, types, imports.
(class_declaration name: (type_identifier) @name) @definition.class
(protocol_declaration name: (type_identifier) @name) @definition.interface
(function_declaration name: (simple_identifier) @name) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.method

(call_expression (simple_identifier) @name) @reference.call
(call_expression (navigation_expression target: (_) @receiver suffix: (navigation_suffix suffix: (simple_identifier) @name))) @reference.call
(user_type (type_identifier) @name) @reference.type
(navigation_expression target: (_) @receiver suffix: (navigation_suffix suffix: (simple_identifier) @name)) @reference.attribute

(import_declaration (identifier) @import.module) @import
