// float16-promotion: a float16 or bfloat16 graph (onnxconverter-common's convert_float_to_float16, a model exported
// in half precision) runs in float32. onnx-core's kernels are float32; rather than a Cast before and after every
// op, the whole graph is promoted once, at load:
//  - float16 / bfloat16 initializers, Constant values and ConstantOfShape values become float32;
//  - Cast / attribute dtypes of float16 or bfloat16 (Cast's `to`, the Random* ops' `dtype`, EyeLike's) become
//    float32, so every value that was half precision is float32;
//  - a graph input declared float16/bfloat16 keeps its name and type (callers feed what the model says) and is
//    cast to float32 once; a graph output likewise is cast back once, at the end.
// Results are then float32 computations of the same graph: nearer the exact result than half-precision arithmetic
// (ONNX Runtime's float16 kernels round every intermediate value), never further. Models whose subgraphs (If, Loop,
// Scan bodies) hold half-precision values are left alone (their ops then need half-precision kernels), as are
// values that are both an initializer and a graph output. Runs first, before any pass evaluates a node.
#include "passes/graph_util.hpp"
#include "passes/passes.hpp"

#include <bit>
#include <cstring>
#include <set>

namespace ophost {

using passes::find_attr;

namespace {

bool is_half(DType d) { return d == DType::kFloat16 || d == DType::kBFloat16; }
bool is_half_code(int64_t code) {
  return code == static_cast<int64_t>(DType::kFloat16) || code == static_cast<int64_t>(DType::kBFloat16);
}

// IEEE binary16 bits -> float (exact).
float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    const float v = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | man << 13);
  return std::bit_cast<float>(sign | (exp + 112) << 23 | man << 13);
}

Tensor to_float32(const Tensor& t) {
  Tensor out(DType::kFloat32, std::vector<int64_t>(t.shape().begin(), t.shape().end()));
  const uint16_t* s = t.data_as<uint16_t>();
  float* d = out.data_as<float>();
  const size_t n = t.numel();
  if (t.dtype() == DType::kFloat16)
    for (size_t i = 0; i < n; ++i) d[i] = half_to_float(s[i]);
  else
    for (size_t i = 0; i < n; ++i) d[i] = std::bit_cast<float>(static_cast<uint32_t>(s[i]) << 16);
  return out;
}

bool subgraphs_hold_half(const Model& m) {
  for (const Node& n : m.nodes)
    for (const Attribute& a : n.attributes)
      if (a.g) {
        const Model& g = *a.g;
        for (const auto& [name, t] : g.initializers)
          if (is_half(t.dtype())) return true;
        for (const ModelValueInfo& v : g.inputs)
          if (is_half(v.dtype)) return true;
        for (const ModelValueInfo& v : g.outputs)
          if (is_half(v.dtype)) return true;
        if (subgraphs_hold_half(g)) return true;
        for (const Node& k : g.nodes)
          for (const Attribute& ka : k.attributes)
            if ((ka.name == "to" || ka.name == "dtype") && is_half_code(ka.i)) return true;
      }
  return false;
}

}  // namespace

PassResult promote_float16(Model& m) {
  PassResult r{"float16-promotion"};
  bool any = false;
  for (const auto& [name, t] : m.initializers) any = any || is_half(t.dtype());
  for (const ModelValueInfo& v : m.inputs) any = any || is_half(v.dtype);
  for (const ModelValueInfo& v : m.outputs) any = any || is_half(v.dtype);
  for (const Node& n : m.nodes)
    for (const Attribute& a : n.attributes)
      any = any || ((a.name == "to" || a.name == "dtype") && is_half_code(a.i)) ||
            (a.type == OPH_ATTR_TENSOR && is_half(a.t.dtype()));
  if (!any) {
    r.message = "no float16 or bfloat16 values";
    return r;
  }
  if (subgraphs_hold_half(m)) {
    r.message = "left alone: a subgraph (If/Loop/Scan body) holds float16/bfloat16 values";
    return r;
  }
  std::set<std::string> outputs;
  for (const ModelValueInfo& v : m.outputs) outputs.insert(v.name);
  size_t inits = 0, attrs = 0, casts = 0, ins = 0, outs = 0;
  for (auto& [name, t] : m.initializers)
    if (is_half(t.dtype()) && !outputs.count(name)) {
      t = to_float32(t);
      ++inits;
    }
  for (Node& n : m.nodes)
    for (Attribute& a : n.attributes) {
      if ((a.name == "to" || a.name == "dtype") && a.type == OPH_ATTR_INT && is_half_code(a.i)) {
        a.i = static_cast<int64_t>(DType::kFloat32);
        ++(n.op_type == "Cast" ? casts : attrs);
      } else if (a.type == OPH_ATTR_TENSOR && is_half(a.t.dtype())) {
        a.t = to_float32(a.t);
        ++attrs;
      }
    }
  for (ModelValueInfo& v : m.value_infos)
    if (is_half(v.dtype)) v.dtype = DType::kFloat32;
  std::set<std::string> names = passes::used_names(m);
  auto cast_node = [](const std::string& name, const std::string& in, const std::string& out, DType to) {
    Node c;
    c.name = name;
    c.op_type = "Cast";
    c.inputs = {in};
    c.outputs = {out};
    Attribute a;
    a.name = "to";
    a.type = OPH_ATTR_INT;
    a.i = static_cast<int64_t>(to);
    c.attributes.push_back(std::move(a));
    return c;
  };
  std::vector<Node> front, back;
  std::set<std::string> input_names;
  for (const ModelValueInfo& v : m.inputs) input_names.insert(v.name);
  for (const ModelValueInfo& v : m.inputs) {
    if (!is_half(v.dtype) || outputs.count(v.name)) continue;
    const std::string f = passes::fresh_name(names, v.name + "_float32");
    for (Node& n : m.nodes)
      for (std::string& in : n.inputs)
        if (in == v.name) in = f;
    front.push_back(cast_node(passes::fresh_name(names, v.name + "_to_float32"), v.name, f, DType::kFloat32));
    ++ins;
  }
  for (const ModelValueInfo& v : m.outputs) {
    if (!is_half(v.dtype) || input_names.count(v.name)) continue;
    bool produced = false;
    for (const Node& n : m.nodes)
      for (const std::string& o : n.outputs) produced = produced || o == v.name;
    if (!produced) continue;  // an initializer output: kept as it is
    const std::string f = passes::fresh_name(names, v.name + "_float32");
    passes::rename_value(m, v.name, f);
    back.push_back(cast_node(passes::fresh_name(names, v.name + "_to_" + dtype_name(v.dtype)), f, v.name, v.dtype));
    ++outs;
  }
  m.nodes.insert(m.nodes.begin(), std::make_move_iterator(front.begin()), std::make_move_iterator(front.end()));
  m.nodes.insert(m.nodes.end(), std::make_move_iterator(back.begin()), std::make_move_iterator(back.end()));
  r.changed = inits + attrs + casts + ins + outs;
  r.message = "the half-precision graph runs in float32: " + std::to_string(inits) + " initializers and " +
              std::to_string(attrs) + " attribute values converted, " + std::to_string(casts) +
              " Casts now to float32, " + std::to_string(ins) + " inputs and " + std::to_string(outs) +
              " outputs cast once at the edges";
  return r;
}

}  // namespace ophost
