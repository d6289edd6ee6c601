; Python: definitions, calls, imports, types, attributes and names passed as values.
(class_definition name: (identifier) @name) @definition.class
(function_definition name: (identifier) @name) @definition.function

(call function: (identifier) @name) @reference.call
(call function: (attribute object: (_) @receiver attribute: (identifier) @name)) @reference.call
(type (identifier) @name) @reference.type
(type (attribute object: (_) @receiver attribute: (identifier) @name)) @reference.type
(class_definition superclasses: (argument_list (identifier) @name)) @reference.type
(class_definition superclasses: (argument_list (attribute object: (_) @receiver attribute: (identifier) @name))) @reference.type
(decorator (identifier) @name) @reference.call
(decorator (attribute object: (_) @receiver attribute: (identifier) @name)) @reference.call
(attribute object: (_) @receiver attribute: (identifier) @name) @reference.attribute
(argument_list (identifier) @name) @reference.name
(keyword_argument value: (identifier) @name) @reference.name
(assignment right: (identifier) @name) @reference.name
(return_statement (identifier) @name) @reference.name

(import_statement name: (dotted_name) @import.module) @import
(import_statement name: (aliased_import name: (dotted_name) @import.module alias: (identifier) @import.alias)) @import
(import_from_statement module_name: (_) @import.module name: (dotted_name) @import.name) @import
(import_from_statement module_name: (_) @import.module name: (aliased_import name: (dotted_name) @import.name alias: (identifier) @import.alias)) @import
