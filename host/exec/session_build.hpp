// Shared by the files that build a session (session_build.cpp, node_schema.cpp, shape_infer.cpp).
#pragma once

#include "exec/session_impl.hpp"

#include <optional>
#include <string>
#include <vector>

namespace ophost {

// "[1,3,?]", or "[?]" when the rank is unknown.
std::string dims_string(const ValueMeta& m);

// The node's inputs (outputs) against the arities of its op's schema; throws Error naming node and op.
void check_arity(const PreparedNode& pn, bool outputs);
// The node's attributes resolved in schema order, with defaults; throws Error on unknown, missing or mistyped
// attributes.
void resolve_attrs(PreparedNode& pn);
// The value of a Constant node (value / value_float(s) / value_int(s)); nullopt for other forms.
std::optional<Tensor> constant_node_value(const Node& n, const std::string& file);

}  // namespace ophost
