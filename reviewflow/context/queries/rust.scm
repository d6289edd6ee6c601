; Rust: functions, methods (in impl and trait blocks), structs, enums, traits, modules,
; macros; calls, method calls, paths, types, `use`.
(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(union_item name: (type_identifier) @name) @definition.struct
(type_item name: (type_identifier) @name) @definition.type
(trait_item name: (type_identifier) @name) @definition.trait
(impl_item type: (type_identifier) @name) @definition.struct
(impl_item type: (generic_type type: (type_identifier) @name)) @definition.struct
(mod_item name: (identifier) @name) @definition.module
(macro_definition name: (identifier) @name) @definition.macro

(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression value: (_) @receiver field: (field_identifier) @name)) @reference.call
(call_expression function: (scoped_identifier path: (_) @receiver name: (identifier) @name)) @reference.call
(call_expression function: (generic_function function: (identifier) @name)) @reference.call
(macro_invocation macro: (identifier) @name) @reference.call
(type_identifier) @name @reference.type
(arguments (identifier) @name) @reference.name

(use_declaration argument: (scoped_identifier path: (_) @import.module name: (identifier) @import.name)) @import
(use_declaration argument: (use_as_clause path: (scoped_identifier path: (_) @import.module name: (identifier) @import.name) alias: (identifier) @import.alias)) @import
(use_declaration argument: (scoped_use_list path: (_) @import.module list: (use_list (identifier) @import.name))) @import
