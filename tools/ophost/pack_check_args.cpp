// `ophost pack check`: the report, the helpers over op definitions, and --attr / --input typed by the op.
#include "pack_check_internal.hpp"

#include <ophost/npy.hpp>

#include <ophost/error.hpp>
#include <ophost/tensor.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <iostream>
#include <optional>

namespace ophost::cli::pack {

void Report::add(Entry e) {
  if (e.kind == Entry::Kind::kFinding) ++findings_;
  if (e.kind == Entry::Kind::kNotRun) ++not_run_;
  if (sink_) {
    sink_(e);
    return;
  }
  switch (e.kind) {
    case Entry::Kind::kOk: std::cout << "  ok       " << e.what << "\n"; break;
    case Entry::Kind::kNote:
    case Entry::Kind::kNotRun: std::cout << "  note     " << e.what << "\n"; break;
    case Entry::Kind::kFinding:
      std::cout << "  FINDING  " << e.where << ": " << e.what << "\n           fix: " << e.fix << "\n";
      break;
  }
}

oph_attr_value AttrArg::view() const {
  oph_attr_value v{};
  v.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
  v.type = type;
  v.f = f;
  v.i = i;
  v.s = s.c_str();
  switch (type) {
    case OPH_ATTR_STRING: v.count = s.size(); break;
    case OPH_ATTR_FLOATS: v.floats = floats.data(); v.count = floats.size(); break;
    case OPH_ATTR_INTS: v.ints = ints.data(); v.count = ints.size(); break;
    case OPH_ATTR_STRINGS:
      string_ptrs_.clear();
      for (const auto& str : strings) string_ptrs_.push_back(str.c_str());
      v.strings = string_ptrs_.data();
      v.count = strings.size();
      break;
    default: break;
  }
  return v;
}

// ---- helpers -----------------------------------------------------------------------------------------------

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

std::string dtype_str(oph_dtype d) {
  std::string base;
  switch (d.code) {
    case OPH_DTYPE_INT: base = "int"; break;
    case OPH_DTYPE_UINT: base = "uint"; break;
    case OPH_DTYPE_FLOAT: base = "float"; break;
    case OPH_DTYPE_BFLOAT: base = "bfloat"; break;
    case OPH_DTYPE_BOOL: return "bool";
    case OPH_DTYPE_COMPLEX: base = "complex"; break;
    case OPH_DTYPE_OPAQUE: return d.bits == 0 ? "string" : "opaque" + std::to_string(d.bits);
    default: return "dtype(code " + std::to_string(d.code) + ")";
  }
  return base + std::to_string(d.bits) + (d.lanes != 1 ? "x" + std::to_string(d.lanes) : "");
}

std::string op_name(const OpSchema& op) { return op.domain + "::" + op.name; }

bool same_dtype(oph_dtype a, oph_dtype b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

bool fillable(oph_dtype d) {
  if (d.lanes != 1) return false;
  switch (d.code) {
    case OPH_DTYPE_FLOAT: return d.bits == 32 || d.bits == 64;
    case OPH_DTYPE_INT:
    case OPH_DTYPE_UINT: return d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64;
    case OPH_DTYPE_BOOL: return d.bits == 8;
    default: return false;
  }
}

size_t elem_bytes(oph_dtype d) { return (size_t{d.bits} * d.lanes + 7) / 8; }

size_t numel(const std::vector<int64_t>& s) {
  size_t n = 1;
  for (int64_t d : s) n *= static_cast<size_t>(d);
  return n;
}

const char* io_kind(const OpSchema& op, const IoSchema* formal) {
  for (const IoSchema& out : op.outputs)
    if (&out == formal) return "output";
  return "input";
}

// ---- --attr and --input ------------------------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> split_assignments(const std::vector<std::string>& args,
                                                                   const std::string& option) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& a : args) {
    size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError(option + " " + a + ": expected NAME=VALUE (e.g. " + option +
                       (option == "--attr" ? " k=3)" : " x=x.npy)"));
    }
    out.emplace_back(a.substr(0, eq), a.substr(eq + 1));
  }
  return out;
}

namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// "1,2,3", "[1, 2, 3]" or "" (an empty list).
std::vector<std::string> split_list(const std::string& text) {
  std::string t = trim(text);
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = trim(std::string_view(t).substr(1, t.size() - 2));
  std::vector<std::string> out;
  if (t.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t comma = t.find(',', start);
    out.push_back(trim(std::string_view(t).substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

template <class T>
bool parse_number(const std::string& text, T& out) {
  std::string t = trim(text);
  const char* first = t.c_str();
  if (!t.empty() && t.front() == '+') ++first;
  auto [ptr, ec] = std::from_chars(first, t.c_str() + t.size(), out);
  return !t.empty() && ec == std::errc() && ptr == t.c_str() + t.size();
}

}  // namespace

const char* attr_type_name(int32_t type) {
  switch (type) {
    case OPH_ATTR_INT: return "an int (e.g. 3)";
    case OPH_ATTR_FLOAT: return "a float (e.g. 0.5)";
    case OPH_ATTR_STRING: return "a string";
    case OPH_ATTR_INTS: return "a list of ints (e.g. 1,2,3)";
    case OPH_ATTR_FLOATS: return "a list of floats (e.g. 0.5,1,2)";
    case OPH_ATTR_STRINGS: return "a list of strings (e.g. a,b)";
    case OPH_ATTR_TENSOR: return "a tensor";
    default: return "of an unknown type";
  }
}

namespace {

AttrArg parse_attr(const OpSchema& op, const AttrSchema& def, const std::string& value) {
  const std::string where = "--attr " + def.name + "=" + value + ": attribute '" + def.name + "' of " +
                            op_name(op) + " is " + attr_type_name(def.type);
  AttrArg a;
  a.type = def.type;
  auto bad = [&](const std::string& item) { return UsageError(where + "; '" + item + "' is not one"); };
  switch (def.type) {
    case OPH_ATTR_INT:
      if (!parse_number(value, a.i)) throw bad(value);
      break;
    case OPH_ATTR_FLOAT:
      if (!parse_number(value, a.f)) throw bad(value);
      break;
    case OPH_ATTR_STRING: a.s = value; break;
    case OPH_ATTR_INTS:
      for (const auto& item : split_list(value)) {
        int64_t v = 0;
        if (!parse_number(item, v)) throw UsageError(where + "; '" + item + "' is not an int");
        a.ints.push_back(v);
      }
      break;
    case OPH_ATTR_FLOATS:
      for (const auto& item : split_list(value)) {
        float v = 0;
        if (!parse_number(item, v)) throw UsageError(where + "; '" + item + "' is not a float");
        a.floats.push_back(v);
      }
      break;
    case OPH_ATTR_STRINGS: a.strings = split_list(value); break;
    default:
      throw UsageError(where + "; pack check takes int, float, string, ints, floats and strings attributes "
                       "on the command line, not this one");
  }
  return a;
}

std::string attr_names(const OpSchema& op) {
  std::vector<std::string> names;
  for (const AttrSchema& a : op.attrs) names.push_back(a.name);
  return names.empty() ? "it has none" : "its attributes: " + join(names, ", ");
}

}  // namespace

size_t input_index(const OpSchema& op, const std::vector<const IoSchema*>& formals, const std::string& name,
                   const std::string& where, const std::string& kind) {
  for (size_t i = 0; i < formals.size(); ++i)
    if (name == formals[i]->name) return i;
  size_t index = 0;
  if (parse_number(name, index) && index < formals.size()) return index;
  std::vector<std::string> names;
  for (size_t i = 0; i < formals.size(); ++i) names.push_back(std::to_string(i) + " '" + formals[i]->name + "'");
  throw UsageError(where + ": " + op_name(op) + " has no " + kind + " '" + name + "' (its " + kind + "s: " +
                   (names.empty() ? std::string("none") : join(names, ", ")) + "; give the name or the index)");
}

void check_sample_dtype(const OpSchema& op, const IoSchema* formal, oph_dtype dtype, const std::string& what,
                        const std::string& where) {
  if (formal->allowed.empty()) return;
  std::vector<std::string> allowed;
  bool ok = false;
  for (oph_dtype d : formal->allowed) {
    ok = ok || same_dtype(d, dtype);
    allowed.push_back(dtype_str(d));
  }
  if (!ok) {
    throw UsageError(where + ": " + what + " " + dtype_str(dtype) + " but " + io_kind(op, formal) + " '" +
                     formal->name + "' of " + op_name(op) + " (type variable '" + formal->type_var + "') allows " +
                     join(allowed, ", "));
  }
}

SampleInput read_sample(const OpSchema& op, const IoSchema* formal, const std::string& file,
                        const std::string& where) {
  Tensor t;
  try {
    t = read_npy(file);
  } catch (const Error& e) {
    throw UsageError(where + ": " + e.what());
  }
  SampleInput s;
  s.file = file;
  s.dtype = to_dl(t.dtype());
  s.shape.assign(t.shape().begin(), t.shape().end());
  const auto* bytes = static_cast<const uint8_t*>(t.data());
  s.bytes.assign(bytes, bytes + t.nbytes());
  check_sample_dtype(op, formal, s.dtype, "the file holds", where);
  return s;
}

RunSpec make_run_spec(const OpSchema& op, const std::vector<std::pair<std::string, std::string>>& attrs,
                      const std::vector<std::pair<std::string, std::string>>& inputs) {
  RunSpec spec;
  for (const auto& [name, value] : attrs) {
    const std::optional<size_t> k = op.attr_index(name);
    if (!k) {
      throw UsageError("--attr " + name + "=" + value + ": " + op_name(op) + " has no attribute '" + name + "' (" +
                       attr_names(op) + ")");
    }
    spec.attrs[*k] = parse_attr(op, op.attrs[*k], value);
  }
  std::vector<const IoSchema*> formals = op.actual_inputs();
  for (const auto& [name, file] : inputs) {
    const std::string where = "--input " + name + "=" + file;
    size_t i = input_index(op, formals, name, where);
    spec.inputs[i] = read_sample(op, formals[i], file, where);
  }
  return spec;
}

}  // namespace ophost::cli::pack
