; Java: classes, interfaces, enums, records, methods, constructors; calls, types, imports.
(class_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.class
(annotation_type_declaration name: (identifier) @name) @definition.interface
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method

(method_invocation object: (_) @receiver name: (identifier) @name) @reference.call
(method_invocation !object name: (identifier) @name) @reference.call
(object_creation_expression type: (type_identifier) @name) @reference.call
(method_reference (_) @receiver . (identifier) @name) @reference.call
(type_identifier) @name @reference.type
(field_access object: (_) @receiver field: (identifier) @name) @reference.attribute

(import_declaration (scoped_identifier scope: (_) @import.module name: (identifier) @import.name)) @import
