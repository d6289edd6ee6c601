; C#: classes, structs, interfaces, records, enums, methods, constructors; calls, `new`,
; types, `using`.
(namespace_declaration name: (_) @name) @definition.module
(file_scoped_namespace_declaration name: (_) @name) @definition.module
(class_declaration name: (identifier) @name) @definition.class
(struct_declaration name: (identifier) @name) @definition.struct
(interface_declaration name: (identifier) @name) @definition.interface
(record_declaration name: (identifier) @name) @definition.class
(enum_declaration name: (identifier) @name) @definition.enum
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(local_function_statement name: (identifier) @name) @definition.function

(invocation_expression function: (identifier) @name) @reference.call
(invocation_expression function: (member_access_expression expression: (_) @receiver name: (identifier) @name)) @reference.call
(object_creation_expression type: (identifier) @name) @reference.call
(base_list (identifier) @name) @reference.type
(variable_declaration type: (identifier) @name) @reference.type
(parameter type: (identifier) @name) @reference.type
(member_access_expression expression: (_) @receiver name: (identifier) @name) @reference.attribute

(using_directive (qualified_name) @import.module) @import
(using_directive (identifier) @import.module .) @import
