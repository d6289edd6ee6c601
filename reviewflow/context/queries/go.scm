; Go: functions, methods (qualified by their receiver type), types; calls, types, selectors.
(function_declaration name: (identifier) @name) @definition.function
(method_declaration receiver: (parameter_list (parameter_declaration type: (type_identifier) @receiver)) name: (field_identifier) @name) @definition.method
(method_declaration receiver: (parameter_list (parameter_declaration type: (pointer_type (type_identifier) @receiver))) name: (field_identifier) @name) @definition.method
(method_declaration receiver: (parameter_list (parameter_declaration type: (generic_type type: (type_identifier) @receiver))) name: (field_identifier) @name) @definition.method
(method_declaration receiver: (parameter_list (parameter_declaration type: (pointer_type (generic_type type: (type_identifier) @receiver)))) name: (field_identifier) @name) @definition.method
(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name) @definition.type
(method_elem name: (field_identifier) @name) @definition.method

(call_expression function: (identifier) @name) @reference.call
(call_expression function: (selector_expression operand: (_) @receiver field: (field_identifier) @name)) @reference.call
(qualified_type package: (package_identifier) @receiver name: (type_identifier) @name) @reference.type
(type_identifier) @name @reference.type
(selector_expression operand: (_) @receiver field: (field_identifier) @name) @reference.attribute
(argument_list (identifier) @name) @reference.name

(import_spec name: (package_identifier) @import.alias path: (_) @import.module) @import
(import_spec name: (dot) path: (_) @import.module) @import
(import_spec !name path: (_) @import.module) @import
