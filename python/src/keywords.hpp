// Keyword construction for the binding's plain structs: vkconv.ConvProblem(N=2, C=3, ...) sets the fields
// named, as C++'s designated initialisers do; a name that is not a field is a TypeError naming it.
#pragma once

#include "bindings.hpp"

namespace vkconv::python {

template <class T>
void init_from_keywords(py::class_<T>& cls) {
    cls.def(py::init([](const py::kwargs& keywords) {
                py::object object = py::cast(T{});
                for (const auto& [key, value] : keywords) {
                    const std::string name = py::str(key);
                    // Fields are properties of the class; methods and unknown names are not fields.
                    const py::object property = py::module_::import("builtins").attr("property");
                    const py::object attribute = py::getattr(py::type::of(object), name.c_str(), py::none());
                    if (name.starts_with("_") || !py::isinstance(attribute, property))
                        throw py::type_error(std::string(py::str(py::type::of(object).attr("__name__"))) +
                                             " has no field '" + name + "'");
                    object.attr(name.c_str()) = value;
                }
                return object.cast<T>();
            }),
            "Keyword arguments set the fields they name; the rest keep their defaults.");
}

// "ClassName(field=value, ...)" from the fields listed, for __repr__.
std::string repr_fields(const py::object& object, std::initializer_list<const char*> fields);

}  // namespace vkconv::python
