; JavaScript: functions, classes, methods, functions bound to names; calls, `new`, imports
; and `require`.
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (identifier) @name) @definition.class
(method_definition name: (property_identifier) @name) @definition.method
(lexical_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @definition.function)
(variable_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @definition.function)

(call_expression function: (identifier) @name) @reference.call
(call_expression function: (member_expression object: (_) @receiver property: (property_identifier) @name)) @reference.call
(new_expression constructor: (identifier) @name) @reference.call
(class_heritage (identifier) @name) @reference.type
(member_expression object: (_) @receiver property: (property_identifier) @name) @reference.attribute
(arguments (identifier) @name) @reference.name
(jsx_opening_element name: (identifier) @name) @reference.call
(jsx_self_closing_element name: (identifier) @name) @reference.call

(import_statement (import_clause (identifier) @import.alias) source: (string) @import.module) @import
(import_statement (import_clause (named_imports (import_specifier name: (identifier) @import.name !alias))) source: (string) @import.module) @import
(import_statement (import_clause (named_imports (import_specifier name: (identifier) @import.name alias: (identifier) @import.alias))) source: (string) @import.module) @import
(import_statement (import_clause (namespace_import (identifier) @import.alias)) source: (string) @import.module) @import
(variable_declarator name: (identifier) @import.alias value: (call_expression function: (identifier) @_require arguments: (arguments (string) @import.module)) (#eq? @_require "require")) @import
