; Scala: classes, objects, traits, enums, functions; calls, types, imports.
(class_definition name: (identifier) @name) @definition.class
(object_definition name: (identifier) @name) @definition.object
(trait_definition name: (identifier) @name) @definition.trait
(enum_definition name: (identifier) @name) @definition.enum
(function_definition name: (identifier) @name) @definition.function
(function_declaration name: (identifier) @name) @definition.function
(type_definition name: (type_identifier) @name) @definition.type

(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression value: (_) @receiver field: (identifier) @name)) @reference.call
(instance_expression (type_identifier) @name) @reference.call
(type_identifier) @name @reference.type
(field_expression value: (_) @receiver field: (identifier) @name) @reference.attribute

(import_declaration) @import.statement @import
