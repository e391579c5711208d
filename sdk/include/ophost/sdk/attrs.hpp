// ophost plugin SDK, C++ layer: attribute types and read access to resolved attributes (Attrs).
// One part of <ophost/ophost_plugin.hpp>, which includes every part in order; include that one.
#pragma once

#include <ophost/sdk/types.hpp>

namespace ophost::sdk {

// ---------------------------------------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------------------------------------

template <class T>
struct attr_traits;
// The C++ types an attribute reads as (an attribute parameter of fn<>(), attr<T>(), .attr(name, default)).
template <class T>
inline constexpr bool is_attr_type_v = false;
template <> inline constexpr bool is_attr_type_v<float> = true;
template <> inline constexpr bool is_attr_type_v<int64_t> = true;
template <> inline constexpr bool is_attr_type_v<std::string> = true;
template <> inline constexpr bool is_attr_type_v<std::vector<float>> = true;
template <> inline constexpr bool is_attr_type_v<std::vector<int64_t>> = true;
template <> inline constexpr bool is_attr_type_v<std::vector<std::string>> = true;
// One message for every place that takes an attribute type; each of those places stops instantiating when it
// fails, so this is the only error the compiler prints (besides where it was instantiated from).
#define OPH_ATTR_TYPE_MESSAGE                                                                                  \
  "ophost SDK: unsupported attribute type; use float, int64_t, std::string, std::vector<float>, "             \
  "std::vector<int64_t> or std::vector<std::string> (not int, double, bool or const char*)"
template <> struct attr_traits<float> { static constexpr int32_t type = OPH_ATTR_FLOAT; };
template <> struct attr_traits<int64_t> { static constexpr int32_t type = OPH_ATTR_INT; };
template <> struct attr_traits<std::string> { static constexpr int32_t type = OPH_ATTR_STRING; };
template <> struct attr_traits<std::vector<float>> { static constexpr int32_t type = OPH_ATTR_FLOATS; };
template <> struct attr_traits<std::vector<int64_t>> { static constexpr int32_t type = OPH_ATTR_INTS; };
template <> struct attr_traits<std::vector<std::string>> { static constexpr int32_t type = OPH_ATTR_STRINGS; };

inline const char* attr_type_name(int32_t t) noexcept {
  switch (t) {
    case OPH_ATTR_FLOAT: return "float";
    case OPH_ATTR_INT: return "int";
    case OPH_ATTR_STRING: return "string";
    case OPH_ATTR_TENSOR: return "tensor";
    case OPH_ATTR_FLOATS: return "floats";
    case OPH_ATTR_INTS: return "ints";
    case OPH_ATTR_STRINGS: return "strings";
    default: return "undefined";
  }
}

// Read access to the resolved attributes of one node, in schema order (borrowed).
class Attrs {
 public:
  Attrs() = default;
  Attrs(const oph_op_def* op, const oph_attr_value* const* values, size_t n) : op_(op), values_(values), n_(n) {}

  size_t index_of(std::string_view name) const {
    for (size_t i = 0; i < n_ && i < op_->num_attributes; ++i)
      if (name == op_->attributes[i]->name) return i;
    throw Error(OPH_CODE_INTERNAL, "op '" + std::string(op_->name) + "' has no attribute '" +
                                       std::string(name) + "' in its schema");
  }
  const oph_attr_value& value(size_t i) const { return *values_[i]; }
  bool has(std::string_view name) const { return value(index_of(name)).type != OPH_ATTR_UNDEFINED; }

  template <class T>
  T get(std::string_view name) const {
    return convert<T>(value(index_of(name)), name);
  }
  template <class T>
  static T convert(const oph_attr_value& v, std::string_view name) {
    static_assert(is_attr_type_v<T>, OPH_ATTR_TYPE_MESSAGE);
    if constexpr (is_attr_type_v<T>) return convert_known<T>(v, name);
    else throw Error(OPH_CODE_INTERNAL, "unsupported attribute type");  // never compiled: the assertion fails
  }
  size_t size() const noexcept { return n_; }

 private:
  template <class T>
  static T convert_known(const oph_attr_value& v, std::string_view name) {
    if (v.type != attr_traits<T>::type) {
      throw Error(OPH_CODE_INVALID_ARGUMENT, "attribute '" + std::string(name) + "' is " +
                                                 attr_type_name(v.type) + ", expected " +
                                                 attr_type_name(attr_traits<T>::type));
    }
    if constexpr (std::is_same_v<T, float>) return v.f;
    else if constexpr (std::is_same_v<T, int64_t>) return v.i;
    else if constexpr (std::is_same_v<T, std::string>) return std::string(v.s ? v.s : "", v.count);
    else if constexpr (std::is_same_v<T, std::vector<float>>) return std::vector<float>(v.floats, v.floats + v.count);
    else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return std::vector<int64_t>(v.ints, v.ints + v.count);
    else {
      std::vector<std::string> out;
      for (size_t i = 0; i < v.count; ++i) out.emplace_back(v.strings[i]);
      return out;
    }
  }

  const oph_op_def* op_ = nullptr;
  const oph_attr_value* const* values_ = nullptr;
  size_t n_ = 0;
};

}  // namespace ophost::sdk
