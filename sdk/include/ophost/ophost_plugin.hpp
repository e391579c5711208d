// ophost plugin SDK: header-only C++20 layer over the C ABI in ophost_plugin.h.
//
// An operator in a few lines:
//
//   #include <ophost/ophost_plugin.hpp>
//   namespace oph = ophost::sdk;
//
//   static void relu6_scale(oph::In<float> x, oph::Out<float> y, float scale, float max_val) {
//     for (size_t i = 0; i < x.size(); ++i) y[i] = std::clamp(x[i] * scale, 0.0f, max_val);
//   }
//
//   OPH_PACK(pack) {
//     pack.op("myops", "relu6_scale")
//         .attr("scale", 1.0f)          // attribute parameters bind to attr() declarations in order
//         .attr("max_val", 6.0f)
//         .infer(oph::same_as_input(0))
//         .fn<relu6_scale>();           // inputs/outputs/types taken from the function's signature
//   }
//
// Everything the host sees is plain C data owned by the pack (valid until the plugin's release). Every
// callback into the pack catches C++ exceptions and turns them into an oph_status; throw oph::Error(code, msg)
// to choose the code. Only the C headers and the C++ standard library are used.
//
// The layer is split by concern under ophost/sdk/: status.hpp (errors, host services), types.hpp (dtypes,
// tensor views), attrs.hpp, infer.hpp (shape inference), kernel.hpp (compute, kernel state), pack.hpp (op and
// pack builders, OPH_PACK). Include this header; the parts include each other in that order.
#pragma once

#include <ophost/ophost_plugin.h>
#include <ophost/sdk/status.hpp>
#include <ophost/sdk/types.hpp>
#include <ophost/sdk/attrs.hpp>
#include <ophost/sdk/infer.hpp>
#include <ophost/sdk/kernel.hpp>
#include <ophost/sdk/pack.hpp>
