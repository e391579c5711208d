// ophost plugin SDK, C++ layer: op and pack builders (OpBuilder, Pack) and OPH_PACK.
// One part of <ophost/ophost_plugin.hpp>, which includes every part in order; include that one.
#pragma once

#include <ophost/sdk/kernel.hpp>

namespace ophost::sdk {

// ---------------------------------------------------------------------------------------------------------
// Op and pack builders
// ---------------------------------------------------------------------------------------------------------

class Pack;

// Owns every C structure of one op (stable addresses; valid until the pack is destroyed).
class OpBuilder {
 public:
  using ComputeFn = std::function<void(KernelContext&)>;
  using Factory = std::function<std::unique_ptr<KernelBase>(const oph_op_def*, const oph_kernel_create_args*)>;

  OpBuilder(std::string domain, std::string name) {
    def_.struct_size = OPH_OP_DEF_STRUCT_SIZE;
    def_.domain = keep(std::move(domain));
    def_.name = keep(std::move(name));
    def_.since_version = 1;
    def_.end_version = OPH_OPSET_MAX;
    def_.device = keep("cpu");
    def_.user_data = this;
    def_.infer = &infer_thunk;
    def_.create_kernel = &create_thunk;
    def_.destroy_kernel = &destroy_thunk;
    def_.kernel_impl = &impl_thunk;
    def_.compute = &compute_thunk;
  }
  OpBuilder(const OpBuilder&) = delete;
  OpBuilder& operator=(const OpBuilder&) = delete;

  OpBuilder& since(int32_t v) { def_.since_version = v; return *this; }
  OpBuilder& until(int32_t v) { def_.end_version = v; return *this; }
  OpBuilder& versions(int32_t since_v, int32_t end_v) { return since(since_v).until(end_v); }
  OpBuilder& device(std::string d) { def_.device = keep(std::move(d)); return *this; }
  OpBuilder& doc(std::string d) { def_.doc = keep(std::move(d)); return *this; }
  OpBuilder& flags(uint64_t f) { def_.flags |= f; return *this; }

  OpBuilder& input(std::string name, std::string type_var, int32_t arity = OPH_ARITY_SINGLE,
                   int32_t memory = OPH_MEMORY_DEVICE, int32_t min_arity = 1) {
    inputs_.push_back(io(std::move(name), std::move(type_var), arity, memory, min_arity));
    return *this;
  }
  OpBuilder& optional_input(std::string name, std::string type_var, int32_t memory = OPH_MEMORY_DEVICE) {
    return input(std::move(name), std::move(type_var), OPH_ARITY_OPTIONAL, memory);
  }
  OpBuilder& output(std::string name, std::string type_var, int32_t arity = OPH_ARITY_SINGLE) {
    outputs_.push_back(io(std::move(name), std::move(type_var), arity, OPH_MEMORY_DEVICE, 1));
    return *this;
  }
  // Renames the formal inputs/outputs (e.g. after fn<>() derived them).
  OpBuilder& input_names(std::initializer_list<const char*> names) { rename(inputs_, names); return *this; }
  OpBuilder& output_names(std::initializer_list<const char*> names) { rename(outputs_, names); return *this; }

  OpBuilder& types(std::string type_var, std::initializer_list<oph_dtype> allowed) {
    for (auto& tc : constraints_) {
      if (std::string_view(tc.type_var) == type_var) {
        auto& v = constraint_types_.at(&tc - constraints_.data());
        for (oph_dtype d : allowed)
          if (std::find(v.begin(), v.end(), d) == v.end()) v.push_back(d);
        return *this;
      }
    }
    constraints_.push_back({OPH_TYPE_CONSTRAINT_STRUCT_SIZE, keep(std::move(type_var)), nullptr, 0});
    constraint_types_.emplace_back(allowed);
    return *this;
  }

  template <class T>
  OpBuilder& attr(std::string name, T default_value) {
    using V = std::conditional_t<std::is_floating_point_v<T>, float,
              std::conditional_t<std::is_integral_v<T>, int64_t,
              std::conditional_t<std::is_convertible_v<T, std::string> && !std::is_same_v<T, std::vector<int64_t>>
                                 && !std::is_same_v<T, std::vector<float>>, std::string, T>>>;
    return attr_impl<V>(std::move(name), V(default_value), false);
  }
  OpBuilder& attr(std::string name, std::initializer_list<int64_t> default_value) {
    return attr_impl<std::vector<int64_t>>(std::move(name), std::vector<int64_t>(default_value), false);
  }
  // Required attribute of type OPH_ATTR_*.
  OpBuilder& required_attr(std::string name, int32_t type) { return schema_attr(std::move(name), type, true); }
  // Optional attribute without default (the kernel sees OPH_ATTR_UNDEFINED when absent).
  OpBuilder& optional_attr(std::string name, int32_t type) { return schema_attr(std::move(name), type, false); }

  OpBuilder& alias(int32_t input, int32_t output, int32_t kind) {
    aliases_.push_back({OPH_ALIAS_DEF_STRUCT_SIZE, input, output, kind});
    return *this;
  }
  OpBuilder& may_inplace(int32_t input = 0, int32_t output = 0) {
    return alias(input, output, OPH_ALIAS_MAY_INPLACE);
  }

  OpBuilder& infer(InferFn f) { infer_ = std::move(f); return *this; }

  // Stateless compute; attributes are available through ctx.attr<T>(name).
  OpBuilder& compute(ComputeFn f) {
    factory_ = [f = std::move(f)](const oph_op_def* op, const oph_kernel_create_args* a) {
      struct K final : KernelBase {
        K(const oph_op_def* op, const oph_kernel_create_args* a, const ComputeFn& f) : KernelBase(op, a), f_(f) {}
        void compute(KernelContext& ctx) override { f_(ctx); }
        ComputeFn f_;
      };
      return std::unique_ptr<KernelBase>(std::make_unique<K>(op, a, f));
    };
    return *this;
  }

  // Stateful kernel: K(const KernelInit&) built once per node, then K::compute(KernelContext&).
  template <class K>
  OpBuilder& kernel() {
    factory_ = [](const oph_op_def* op, const oph_kernel_create_args* a) {
      struct Holder final : KernelBase {
        Holder(const oph_op_def* op, const oph_kernel_create_args* a) : KernelBase(op, a), k(KernelInit(a)) {}
        void compute(KernelContext& ctx) override { k.compute(ctx); }
        Implementation implementation() override {
          if constexpr (requires { { k.implementation() } -> std::convertible_to<Implementation>; })
            return k.implementation();
          else
            return {};
        }
        K k;
      };
      return std::unique_ptr<KernelBase>(std::make_unique<Holder>(op, a));
    };
    return *this;
  }

  // Signature-driven op: inputs from In<T> parameters, outputs from Out<T> parameters (type variables T0, T1,
  // ... one per distinct element type), attribute parameters bound to attr() declarations in order.
  template <auto Fn>
  OpBuilder& fn() {
    using Args = typename detail::fn_traits<decltype(Fn)>::args;
    // Parameters after the In<T> / Out<T> ones are attributes (the instantiation context names the function).
    static_assert(detail::attr_params_ok<Args>::value, OPH_ATTR_TYPE_MESSAGE);
    if constexpr (detail::attr_params_ok<Args>::value) {
      derive_signature<Args>(std::make_index_sequence<std::tuple_size_v<Args>>{});
      compute([](KernelContext& ctx) { invoke<Fn, Args>(ctx, std::make_index_sequence<std::tuple_size_v<Args>>{}); });
    }
    return *this;
  }

  const oph_op_def* finish() {
    if (!infer_) throw Error(OPH_CODE_FAILED_PRECONDITION, op_id() + ": no infer() given");
    if (!factory_) throw Error(OPH_CODE_FAILED_PRECONDITION, op_id() + ": no compute given (fn, compute or kernel)");
    for (size_t i = 0; i < constraints_.size(); ++i) {
      constraints_[i].allowed = constraint_types_[i].data();
      constraints_[i].num_allowed = constraint_types_[i].size();
    }
    for (size_t i = 0; i < attrs_.size(); ++i) {
      attr_default_fix(i);
      attrs_[i].default_value = defaults_[i].value.type == OPH_ATTR_UNDEFINED ? nullptr : &defaults_[i].value;
    }
    def_.inputs = pointers(inputs_, input_ptrs_);
    def_.num_inputs = inputs_.size();
    def_.outputs = pointers(outputs_, output_ptrs_);
    def_.num_outputs = outputs_.size();
    def_.type_constraints = pointers(constraints_, constraint_ptrs_);
    def_.num_type_constraints = constraints_.size();
    def_.attributes = pointers(attrs_, attr_ptrs_);
    def_.num_attributes = attrs_.size();
    def_.aliases = pointers(aliases_, alias_ptrs_);
    def_.num_aliases = aliases_.size();
    return &def_;
  }

  std::string op_id() const { return std::string(def_.domain) + "::" + def_.name; }

 private:
  const char* keep(std::string s) { return strings_.emplace_back(std::move(s)).c_str(); }

  // The C view of `structs`: an array of pointers to its elements (NULL when empty), kept in `ptrs`.
  template <class T>
  static const T* const* pointers(const std::vector<T>& structs, std::vector<const T*>& ptrs) {
    ptrs.clear();
    for (const T& s : structs) ptrs.push_back(&s);
    return ptrs.empty() ? nullptr : ptrs.data();
  }

  oph_io_def io(std::string name, std::string type_var, int32_t arity, int32_t memory, int32_t min_arity) {
    return {OPH_IO_DEF_STRUCT_SIZE, keep(std::move(name)), keep(std::move(type_var)), arity, min_arity, memory};
  }
  void rename(std::vector<oph_io_def>& v, std::initializer_list<const char*> names) {
    if (names.size() != v.size())
      throw Error(OPH_CODE_INVALID_ARGUMENT, op_id() + ": " + std::to_string(names.size()) +
                                                 " names for " + std::to_string(v.size()) + " values");
    size_t i = 0;
    for (const char* n : names) v[i++].name = keep(n);
  }

  template <class V>
  OpBuilder& attr_impl(std::string name, V value, bool required) {
    static_assert(is_attr_type_v<V>, OPH_ATTR_TYPE_MESSAGE);
    if constexpr (is_attr_type_v<V>) attr_store<V>(std::move(name), std::move(value), required);
    return *this;
  }
  template <class V>
  void attr_store(std::string name, V value, bool required) {
    oph_attr_def d{};
    d.struct_size = OPH_ATTR_DEF_STRUCT_SIZE;
    d.name = keep(std::move(name));
    d.type = attr_traits<V>::type;
    d.required = required;
    attrs_.push_back(d);
    auto& store = defaults_.emplace_back();
    store.value.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;
    store.value.type = d.type;
    if constexpr (std::is_same_v<V, float>) store.value.f = value;
    else if constexpr (std::is_same_v<V, int64_t>) store.value.i = value;
    else if constexpr (std::is_same_v<V, std::string>) store.s = std::move(value);
    else if constexpr (std::is_same_v<V, std::vector<float>>) store.floats = std::move(value);
    else if constexpr (std::is_same_v<V, std::vector<int64_t>>) store.ints = std::move(value);
    else store.strings = std::move(value);
  }
  OpBuilder& schema_attr(std::string name, int32_t type, bool required) {
    oph_attr_def d{};
    d.struct_size = OPH_ATTR_DEF_STRUCT_SIZE;
    d.name = keep(std::move(name));
    d.type = type;
    d.required = required;
    attrs_.push_back(d);
    defaults_.emplace_back().value.struct_size = OPH_ATTR_VALUE_STRUCT_SIZE;  // type UNDEFINED: no default
    return *this;
  }
  // Points the default value of attribute i at its stored payload.
  void attr_default_fix(size_t i) {
    DefaultStore& s = defaults_[i];
    oph_attr_value& v = s.value;
    switch (v.type) {
      case OPH_ATTR_STRING: v.s = s.s.c_str(); v.count = s.s.size(); break;
      case OPH_ATTR_FLOATS: v.floats = s.floats.data(); v.count = s.floats.size(); break;
      case OPH_ATTR_INTS: v.ints = s.ints.data(); v.count = s.ints.size(); break;
      case OPH_ATTR_STRINGS:
        s.string_ptrs.clear();
        for (auto& str : s.strings) s.string_ptrs.push_back(str.c_str());
        v.strings = s.string_ptrs.data();
        v.count = s.strings.size();
        break;
      default: break;
    }
  }

  std::string type_var_for(oph_dtype d) {
    for (size_t i = 0; i < constraint_types_.size(); ++i)
      if (constraint_types_[i].size() == 1 && constraint_types_[i][0] == d) return constraints_[i].type_var;
    std::string var = constraints_.empty() ? "T" : "T" + std::to_string(constraints_.size());
    types(var, {d});
    return var;
  }

  template <class Args, size_t... I>
  void derive_signature(std::index_sequence<I...>) {
    size_t attr_index = 0;
    (derive_one<std::tuple_element_t<I, Args>>(attr_index), ...);
    if (attr_index != attrs_.size())
      throw Error(OPH_CODE_INVALID_ARGUMENT, op_id() + ": the function takes " + std::to_string(attr_index) +
                                                 " attribute parameters but " + std::to_string(attrs_.size()) +
                                                 " attributes are declared");
  }
  template <class A>
  void derive_one(size_t& attr_index) {
    constexpr int k = detail::kind_of<A>();
    if constexpr (k == 1) {
      input("input_" + std::to_string(inputs_.size()), type_var_for(dtype_v<typename A::value_type>));
    } else if constexpr (k == 2) {
      output("output_" + std::to_string(outputs_.size()), type_var_for(dtype_v<typename A::value_type>));
    } else if constexpr (k == 3) {
      if (attr_index >= attrs_.size() || attrs_[attr_index].type != attr_traits<A>::type)
        throw Error(OPH_CODE_INVALID_ARGUMENT,
                    op_id() + ": attribute parameter " + std::to_string(attr_index) +
                        " of the function does not match the attr() declarations (declare attr() before fn<>())");
      ++attr_index;
    }
  }

  template <auto Fn, class Args, size_t... I>
  static void invoke(KernelContext& ctx, std::index_sequence<I...>) {
    size_t in = 0, out = 0, at = 0;
    // Braced init guarantees left-to-right evaluation.
    std::tuple<std::tuple_element_t<I, Args>...> values{fetch<std::tuple_element_t<I, Args>>(ctx, in, out, at)...};
    std::apply([](auto&... a) { Fn(a...); }, values);
  }
  template <class A>
  static decltype(auto) fetch(KernelContext& ctx, size_t& in, size_t& out, size_t& at) {
    constexpr int k = detail::kind_of<A>();
    if constexpr (k == 0) return std::ref(ctx).get();
    else if constexpr (k == 1) return ctx.input<typename A::value_type>(in++);
    else if constexpr (k == 2) return ctx.output<typename A::value_type>(out++);
    else return Attrs::convert<A>(ctx.attrs().value(at++), "parameter");
  }

  static oph_status* infer_thunk(const oph_infer_context* c) {
    return guarded("infer", [c] {
      InferContext ctx(c);
      static_cast<OpBuilder*>(c->op->user_data)->infer_(ctx);
    });
  }
  static oph_status* create_thunk(const oph_kernel_create_args* a, void** out_state) {
    return guarded("create_kernel", [a, out_state] {
      auto* self = static_cast<OpBuilder*>(a->op->user_data);
      *out_state = self->factory_(a->op, a).release();  // owned by the host until destroy_kernel
    });
  }
  static void destroy_thunk(void* state) { std::unique_ptr<KernelBase> owned(static_cast<KernelBase*>(state)); }
  static const char* impl_thunk(void* state, bool* is_reference) noexcept {
    try {
      auto* k = static_cast<KernelBase*>(state);
      if (k == nullptr) return nullptr;
      Implementation impl = k->implementation();
      if (impl.name.empty()) return nullptr;
      if (is_reference) *is_reference = impl.reference;
      k->impl_name_ = std::move(impl.name);
      return k->impl_name_.c_str();
    } catch (...) {
      return nullptr;
    }
  }
  static oph_status* compute_thunk(void* state, const oph_compute_context* c) {
    return guarded("compute", [state, c] {
      auto* k = static_cast<KernelBase*>(state);
      Attrs attrs = k->attrs();
      KernelContext ctx(c, attrs);
      k->compute(ctx);
    });
  }

  struct DefaultStore {
    oph_attr_value value{};
    std::string s;
    std::vector<float> floats;
    std::vector<int64_t> ints;
    std::vector<std::string> strings;
    std::vector<const char*> string_ptrs;
  };

  oph_op_def def_{};
  std::deque<std::string> strings_;
  std::vector<oph_io_def> inputs_, outputs_;
  std::vector<oph_type_constraint> constraints_;
  std::vector<std::vector<oph_dtype>> constraint_types_;
  std::vector<oph_attr_def> attrs_;
  std::deque<DefaultStore> defaults_;
  std::vector<oph_alias_def> aliases_;
  std::vector<const oph_io_def*> input_ptrs_, output_ptrs_;
  std::vector<const oph_type_constraint*> constraint_ptrs_;
  std::vector<const oph_attr_def*> attr_ptrs_;
  std::vector<const oph_alias_def*> alias_ptrs_;
  InferFn infer_;
  Factory factory_;
};

// An operator pack under construction; OPH_PACK gives you one named `pack`.
class Pack {
 public:
  Pack(std::string name, std::string version) : name_(std::move(name)), version_(std::move(version)) {}

  OpBuilder& op(std::string domain, std::string name) {
    return *ops_.emplace_back(std::make_unique<OpBuilder>(std::move(domain), std::move(name)));
  }

  // Entry implementation used by OPH_PACK.
  static oph_status* entry(const oph_host_info* host, const oph_plugin_info** out_info, const char* name,
                           const char* version, void (*define)(Pack&)) noexcept {
    oph_status* refused = nullptr;
    if (!oph_entry_check(host, out_info, name, &refused)) return refused;
    detail::services_slot() = host->services;
    return guarded("plugin entry", [&] {
      // One library image can be handed to several hosts (several Runtimes in one process share the dlopen
      // handle): they share one Pack, destroyed when the last of them releases it.
      std::lock_guard<std::mutex> lock(instance_mutex());
      Pack*& slot = instance();
      if (!slot) {
        auto pack = std::make_unique<Pack>(name, version);
        define(*pack);
        pack->finish();
        slot = pack.release();  // owned through the slot until the last release
      }
      ++references();
      *out_info = &slot->info_;
    });
  }

 private:
  // A plain pointer, not a static unique_ptr: statics of the library are destroyed at exit, possibly before a
  // host releases the pack, and a trivially destructible slot cannot be destroyed twice.
  static Pack*& instance() {
    static Pack* pack = nullptr;
    return pack;
  }
  static size_t& references() {
    static size_t refs = 0;
    return refs;
  }
  static std::mutex& instance_mutex() {
    static std::mutex m;
    return m;
  }
  static void release(void*) {
    std::lock_guard<std::mutex> lock(instance_mutex());
    if (references() > 0 && --references() == 0) {
      std::unique_ptr<Pack> owned(instance());
      instance() = nullptr;
    }
  }

  void finish() {
    for (auto& op : ops_) op_ptrs_.push_back(op->finish());
    info_.struct_size = OPH_PLUGIN_INFO_STRUCT_SIZE;
    info_.abi_major = OPH_ABI_MAJOR;
    info_.minor_built = OPH_ABI_MINOR;
    info_.minor_required = 0;
    info_.name = name_.c_str();
    info_.version = version_.c_str();
    info_.kind = OPH_PLUGIN_KIND_OPERATOR_PACK;
    info_.ops = op_ptrs_.data();
    info_.num_ops = op_ptrs_.size();
    info_.devices = nullptr;
    info_.num_devices = 0;
    info_.plugin_state = nullptr;
    info_.release = &release;
  }

  std::string name_, version_;
  std::vector<std::unique_ptr<OpBuilder>> ops_;
  std::vector<const oph_op_def*> op_ptrs_;
  oph_plugin_info info_{};
};

}  // namespace ophost::sdk

// Defines the pack's entry symbol and the body that declares its ops, with a `Pack& pack` in scope:
//   OPH_PACK(pack) { pack.op("myops", "relu6_scale")...; }
// The pack's name and version come from OPH_PLUGIN_NAME and OPH_PLUGIN_VERSION, which ophost_add_plugin()
// defines (they must equal the manifest's).
#define OPH_PACK(pack_var)                                                                                 \
  static void oph_pack_define_(::ophost::sdk::Pack& pack_var);                                             \
  static oph_status* oph_pack_entry_(const oph_host_info* host, const oph_plugin_info** out_info) {        \
    return ::ophost::sdk::Pack::entry(host, out_info, OPH_PLUGIN_NAME, OPH_PLUGIN_VERSION, &oph_pack_define_); \
  }                                                                                                        \
  OPH_DEFINE_PLUGIN_ENTRY(oph_pack_entry_)                                                                 \
  static void oph_pack_define_(::ophost::sdk::Pack& pack_var)
