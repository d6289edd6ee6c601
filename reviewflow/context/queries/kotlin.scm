; Kotlin: classes, interfaces, objects, functions; calls, member calls, types, imports.
(class_declaration name: (identifier) @name) @definition.class
(object_declaration name: (identifier) @name) @definition.object
(function_declaration name: (identifier) @name) @definition.function

(call_expression (identifier) @name) @reference.call
(call_expression (navigation_expression (_) @receiver . (identifier) @name .)) @reference.call
(constructor_invocation (user_type (identifier) @name)) @reference.call
(user_type (identifier) @name) @reference.type
(navigation_expression (_) @receiver . (identifier) @name .) @reference.attribute

(import (qualified_identifier) @import.module . (identifier) @import.alias) @import
(import (qualified_identifier) @import.module .) @import
