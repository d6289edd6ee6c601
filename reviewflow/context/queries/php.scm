; PHP: functions, classes, interfaces, traits, methods; calls, `new`, types, `use`.
(function_definition name: (name) @name) @definition.function
(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(method_declaration name: (name) @name) @definition.method
(namespace_definition name: (namespace_name) @name) @definition.module

(function_call_expression function: (name) @name) @reference.call
(function_call_expression function: (qualified_name (name) @name)) @reference.call
(member_call_expression object: (_) @receiver name: (name) @name) @reference.call
(nullsafe_member_call_expression object: (_) @receiver name: (name) @name) @reference.call
(scoped_call_expression scope: (_) @receiver name: (name) @name) @reference.call
(object_creation_expression (name) @name) @reference.call
(object_creation_expression (qualified_name (name) @name)) @reference.call
(named_type (name) @name) @reference.type
(base_clause (name) @name) @reference.type
(class_interface_clause (name) @name) @reference.type

(namespace_use_clause (qualified_name) @import.module) @import
(namespace_use_clause (qualified_name) @import.module alias: (name) @import.alias) @import
