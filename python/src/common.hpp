// Shared pieces of the ophost Python extension (_ophost): exceptions, dtype names, NumPy <-> Tensor.
#pragma once

#include <ophost/error.hpp>
#include <ophost/runtime.hpp>
#include <ophost/tensor.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;

namespace ophost::python {

// Exception classes of the module (created in module.cpp; see there for the hierarchy).
struct Exceptions {
  PyObject* base = nullptr;               // OphostError(RuntimeError)
  PyObject* fail = nullptr;               // Fail
  PyObject* invalid_argument = nullptr;   // InvalidArgument(OphostError, ValueError)
  PyObject* invalid_type = nullptr;       // InvalidType(InvalidArgument, TypeError)
  PyObject* no_such_file = nullptr;       // NoSuchFile(OphostError, FileNotFoundError)
  PyObject* not_implemented = nullptr;    // NotImplemented
  PyObject* invalid_graph = nullptr;      // InvalidGraph
  PyObject* runtime_exception = nullptr;  // RuntimeException
  PyObject* ep_fail = nullptr;            // EPFail
};
extern Exceptions g_exc;

// Raises `type(message)` with `.code` set to `code` (an OPH code name such as "INVALID_ARGUMENT").
[[noreturn]] void raise(PyObject* type, const std::string& message, const char* code);
// The Python exception class for a host error code.
PyObject* exception_for(Code code);

// 'tensor(float)', 'tensor(int64)', ... (ONNX Runtime's type strings).
const char* ort_type(DType dtype);
// DType for an ONNX Runtime type string; kUndefined when unknown.
DType dtype_from_ort_type(const std::string& type);
// NumPy dtype of a DType (object for strings); throws InvalidType for those NumPy lacks (bfloat16).
py::dtype numpy_dtype(DType dtype);
// DType of a NumPy dtype in native byte order; kUndefined when none matches. `swapped` is set when the dtype
// is a non-native byte order of a known type.
DType dtype_of(const py::dtype& dt, bool* swapped = nullptr);
// DType from a user's element_type argument: a NumPy dtype, a type (numpy.float32, float, ...) or a string
// ('float32', 'tensor(float)').
DType dtype_from_object(py::handle obj);
// "[2, 8]" with symbolic names or '?' for open dims.
std::string shape_text(const std::vector<py::object>& shape);

// What a session knows of one graph input or output (the host's ValueInfo, plus the symbolic dim names read
// from the model file; entries are None, an int or a str).
struct NodeArg {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;       // host's view: -1 open
  std::vector<py::object> shape;   // Python view: int, str (symbolic) or None
  bool has_shape = false;          // the rank is known (else shape is [] and means nothing)
  std::string type() const { return ort_type(dtype); }
};

// A tensor the host may read during a run: NumPy arrays that are C-contiguous, native-order and 64-byte
// aligned are shared without a copy; anything else (strided, Fortran-ordered, misaligned) is copied once into
// an aligned tensor. Raises InvalidType (TypeError) for a wrong dtype and InvalidArgument (ValueError) for a
// wrong shape or byte order, naming the input, the expected dtype and shape. `expected` may be null (no check).
// Needs the GIL.
Tensor tensor_from_object(const std::string& what, py::handle obj, const NodeArg* expected);
// A tensor whose buffer the host may read: `t` itself when its buffer is 64-byte aligned, else an aligned copy.
Tensor aligned_for_run(const Tensor& t);
// A NumPy array over the tensor's buffer (no copy; the array keeps the buffer alive). Strings become an
// object array of str.
py::array array_from_tensor(const Tensor& t);
// A deep copy of a NumPy array's elements into a new tensor of `dtype` and the array's shape (any layout).
Tensor copy_array(const py::array& a, DType dtype);
// Checks an array's dtype/shape against `expected` (see tensor_from_object).
void check_array(const std::string& what, const py::array& a, DType dtype, bool swapped, const NodeArg* expected);

// OrtValue: a tensor on the CPU (ophost's host tensors).
struct OrtValue {
  Tensor tensor;
  // Keeps alive what the tensor's buffer belongs to when the tensor only borrows it (a NumPy array, a DLPack
  // producer, a buffer_ptr the caller vouched for is not kept).
  py::object owner;
};

// Session::run with a Python callable as its node observer (node_observer.cpp; InferenceSession.run's on_node):
// on_node(ophost.NodeOutputs) per node, with the GIL taken for each call. Call it with the GIL held; it releases
// the GIL while the model runs. An exception the callable raises stops the run and is re-raised from here as it
// was raised; InvalidType when on_node is not callable.
std::vector<NamedTensor> run_observed(Session& session, const std::vector<NamedTensor>& inputs, py::handle on_node);
// Registers ophost.NodeOutputs (what on_node receives).
void bind_node_outputs(py::module_& m);

// DLPack (dlpack.cpp).
py::capsule to_dlpack(const Tensor& t);
Tensor from_dlpack(py::handle obj);

}  // namespace ophost::python
