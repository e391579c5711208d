// NumPy <-> ophost::Tensor, dtype names, exceptions.
#include "common.hpp"

#include <cstdint>
#include <cstring>

namespace ophost::python {

Exceptions g_exc;

void raise(PyObject* type, const std::string& message, const char* code) {
  py::object inst = py::reinterpret_steal<py::object>(PyObject_CallFunction(type, "s", message.c_str()));
  if (!inst) throw py::error_already_set();
  if (PyObject_SetAttrString(inst.ptr(), "code", py::str(code).ptr()) != 0) throw py::error_already_set();
  PyErr_SetObject(type, inst.ptr());
  throw py::error_already_set();
}

PyObject* exception_for(Code code) {
  switch (code) {
    case Code::kInvalidArgument:
    case Code::kOutOfRange:
      return g_exc.invalid_argument;
    case Code::kUnimplemented:
      return g_exc.not_implemented;
    case Code::kDataLoss:
      return g_exc.invalid_graph;
    case Code::kResourceExhausted:
    case Code::kInternal:
    case Code::kUnknown:
    case Code::kAborted:
    case Code::kCancelled:
    case Code::kDeadlineExceeded:
      return g_exc.runtime_exception;
    case Code::kUnavailable:
      return g_exc.ep_fail;
    default:
      return g_exc.fail;
  }
}

const char* ort_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "tensor(float)";
    case DType::kUint8: return "tensor(uint8)";
    case DType::kInt8: return "tensor(int8)";
    case DType::kUint16: return "tensor(uint16)";
    case DType::kInt16: return "tensor(int16)";
    case DType::kInt32: return "tensor(int32)";
    case DType::kInt64: return "tensor(int64)";
    case DType::kString: return "tensor(string)";
    case DType::kBool: return "tensor(bool)";
    case DType::kFloat16: return "tensor(float16)";
    case DType::kFloat64: return "tensor(double)";
    case DType::kUint32: return "tensor(uint32)";
    case DType::kUint64: return "tensor(uint64)";
    case DType::kBFloat16: return "tensor(bfloat16)";
    default: return "tensor(undefined)";
  }
}

DType dtype_from_ort_type(const std::string& type) {
  for (int i = 1; i <= 16; ++i) {
    auto d = static_cast<DType>(i);
    if (type == ort_type(d)) return d;
  }
  return DType::kUndefined;
}

namespace {
// NumPy's type numbers (stable ABI values).
constexpr int kNpyBool = 0, kNpyInt8 = 1, kNpyUint8 = 2, kNpyInt16 = 3, kNpyUint16 = 4, kNpyInt32 = 5,
              kNpyUint32 = 6, kNpyInt64 = 7, kNpyUint64 = 8, kNpyFloat32 = 11, kNpyFloat64 = 12,
              kNpyObject = 17, kNpyFloat16 = 23;

int npy_num(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return kNpyFloat32;
    case DType::kUint8: return kNpyUint8;
    case DType::kInt8: return kNpyInt8;
    case DType::kUint16: return kNpyUint16;
    case DType::kInt16: return kNpyInt16;
    case DType::kInt32: return kNpyInt32;
    case DType::kInt64: return kNpyInt64;
    case DType::kString: return kNpyObject;
    case DType::kBool: return kNpyBool;
    case DType::kFloat16: return kNpyFloat16;
    case DType::kFloat64: return kNpyFloat64;
    case DType::kUint32: return kNpyUint32;
    case DType::kUint64: return kNpyUint64;
    default: return -1;
  }
}

std::string numpy_name(DType dtype) {
  switch (dtype) {
    case DType::kString: return "str";
    case DType::kBool: return "bool_";
    case DType::kBFloat16: return "(none: NumPy has no bfloat16)";
    default: return dtype_name(dtype);
  }
}

std::string expectation(const NodeArg& e) {
  std::string s = std::string(ort_type(e.dtype));
  if (e.dtype != DType::kUndefined && e.dtype != DType::kBFloat16)
    s += " (numpy." + numpy_name(e.dtype) + ")";
  if (e.has_shape) s += " of shape " + shape_text(e.shape);
  return s;
}

std::string array_text(const py::array& a) {
  std::string s = py::str(a.dtype()).cast<std::string>() + " array of shape (";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

py::object& numpy_attr(const char* name) {
  // Cached for the life of the process (never destroyed: the interpreter may be gone by then).
  static auto* np = new py::object(py::module_::import("numpy"));
  static auto* cache = new std::vector<std::pair<std::string, py::object>>();
  for (auto& [n, o] : *cache)
    if (n == name) return o;
  cache->emplace_back(name, np->attr(name));
  return cache->back().second;
}
}  // namespace

py::dtype numpy_dtype(DType dtype) {
  int num = npy_num(dtype);
  if (num < 0) {
    raise(g_exc.invalid_type,
          std::string("the tensor is ") + ort_type(dtype) + ", which has no NumPy dtype (NumPy has no bfloat16)",
          "INVALID_ARGUMENT");
  }
  return py::reinterpret_steal<py::dtype>(
      reinterpret_cast<PyObject*>(py::detail::npy_api::get().PyArray_DescrFromType_(num)));
}

DType dtype_of(const py::dtype& dt, bool* swapped) {
  if (swapped) *swapped = dt.byteorder() == '>';  // this host is little-endian ('=' and '<' are native)
  const auto size = dt.itemsize();
  switch (dt.kind()) {
    case 'f':
      return size == 4 ? DType::kFloat32 : size == 8 ? DType::kFloat64 : size == 2 ? DType::kFloat16 : DType::kUndefined;
    case 'i':
      return size == 1 ? DType::kInt8 : size == 2 ? DType::kInt16 : size == 4 ? DType::kInt32
             : size == 8 ? DType::kInt64 : DType::kUndefined;
    case 'u':
      return size == 1 ? DType::kUint8 : size == 2 ? DType::kUint16 : size == 4 ? DType::kUint32
             : size == 8 ? DType::kUint64 : DType::kUndefined;
    case 'b':
      return DType::kBool;
    case 'U':
    case 'S':
    case 'O':
      if (swapped) *swapped = false;
      return DType::kString;
    default:
      return DType::kUndefined;
  }
}

DType dtype_from_object(py::handle obj) {
  if (obj.is_none()) return DType::kUndefined;
  if (py::isinstance<py::str>(obj)) {
    std::string s = obj.cast<std::string>();
    if (s.rfind("tensor(", 0) == 0) return dtype_from_ort_type(s);
  }
  py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(obj));
  bool swapped = false;
  DType d = dtype_of(dt, &swapped);
  if (swapped) d = DType::kUndefined;
  return d;
}

std::string shape_text(const std::vector<py::object>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    if (shape[i].is_none()) s += "?";
    else s += py::str(shape[i]).cast<std::string>();
  }
  return s + "]";
}

void check_array(const std::string& what, const py::array& a, DType dt, bool swapped, const NodeArg* expected) {
  if (dt == DType::kUndefined) {
    raise(g_exc.invalid_type,
          what + ": got a " + array_text(a) + ", a NumPy dtype with no ONNX tensor type" +
              (expected ? "; the model expects " + expectation(*expected) : std::string()),
          "INVALID_ARGUMENT");
  }
  if (swapped) {
    raise(g_exc.invalid_argument,
          what + ": got a byte-swapped (big-endian) " + array_text(a) +
              "; ophost reads native byte order: pass arr.astype(arr.dtype.newbyteorder('='))" +
              (expected ? " (the model expects " + expectation(*expected) + ")" : std::string()),
          "INVALID_ARGUMENT");
  }
  if (!expected) return;
  if (expected->dtype != DType::kUndefined && dt != expected->dtype) {
    std::string fix = expected->dtype == DType::kString || expected->dtype == DType::kBFloat16
                          ? std::string()
                          : "; convert it with arr.astype(numpy." + numpy_name(expected->dtype) + ")";
    raise(g_exc.invalid_type, what + ": got a " + array_text(a) + ", but the model expects " + expectation(*expected) + fix,
          "INVALID_ARGUMENT");
  }
  if (!expected->has_shape) return;
  const size_t rank = expected->shape.size();
  bool ok = static_cast<size_t>(a.ndim()) == rank;
  std::string where;
  for (size_t k = 0; ok && k < rank; ++k) {
    const py::object& d = expected->shape[k];
    if (py::isinstance<py::int_>(d) && d.cast<int64_t>() != a.shape(static_cast<py::ssize_t>(k))) {
      ok = false;
      where = " (dimension " + std::to_string(k) + " must be " + std::to_string(d.cast<int64_t>()) + ")";
    }
  }
  if (!ok) {
    if (where.empty()) where = " (rank " + std::to_string(rank) + ", got rank " + std::to_string(a.ndim()) + ")";
    raise(g_exc.invalid_argument, what + ": got a " + array_text(a) + ", but the model expects " +
                                      expectation(*expected) + where,
          "INVALID_ARGUMENT");
  }
}

Tensor copy_array(const py::array& a, DType dtype) {
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  Tensor t(dtype, shape);
  if (t.numel() == 0) return t;
  if (dtype == DType::kString) {
    py::list items = a.attr("ravel")().attr("tolist")();
    auto& out = t.strings();
    for (size_t i = 0; i < out.size(); ++i) {
      py::handle item = items[i];
      if (py::isinstance<py::bytes>(item)) out[i] = item.cast<std::string>();
      else if (py::isinstance<py::str>(item)) out[i] = item.cast<std::string>();
      else
        raise(g_exc.invalid_type, "element " + std::to_string(i) + " of a string tensor is a " +
                                      std::string(Py_TYPE(item.ptr())->tp_name) + ", not str or bytes",
              "INVALID_ARGUMENT");
    }
    return t;
  }
  if (a.flags() & py::array::c_style) {
    std::memcpy(t.data(), a.data(), t.nbytes());
    return t;
  }
  // Strided or Fortran-ordered: NumPy copies element by element into a C-ordered view of the tensor.
  std::vector<py::ssize_t> dims(a.shape(), a.shape() + a.ndim());
  py::array dst(numpy_dtype(dtype), dims, std::vector<py::ssize_t>{}, t.data(), py::none());
  numpy_attr("copyto")(dst, a, py::arg("casting") = "no");
  return t;
}

Tensor aligned_for_run(const Tensor& t) {
  if (t.dtype() != DType::kString && t.data() && reinterpret_cast<uintptr_t>(t.data()) % 64 != 0) return t.clone();
  return t;
}

Tensor tensor_from_object(const std::string& what, py::handle obj, const NodeArg* expected) {
  if (py::isinstance<OrtValue>(obj)) {
    const OrtValue& v = obj.cast<const OrtValue&>();
    if (v.tensor.empty()) raise(g_exc.invalid_argument, what + ": the OrtValue holds no tensor", "INVALID_ARGUMENT");
    if (expected) {
      // Check through a NumPy view (no copy) so the messages are the same as for arrays.
      if (v.tensor.dtype() != DType::kString && v.tensor.dtype() != DType::kBFloat16) {
        py::array view = array_from_tensor(v.tensor);
        check_array(what, view, v.tensor.dtype(), false, expected);
      }
    }
    return aligned_for_run(v.tensor);
  }
  if (!py::isinstance<py::array>(obj) && py::isinstance(obj, numpy_attr("generic"))) {
    // A NumPy scalar (what arithmetic on a 0-d array returns): its 0-d array.
    py::array scalar = numpy_attr("asarray")(obj);
    return tensor_from_object(what, scalar, expected);
  }
  if (!py::isinstance<py::array>(obj)) {
    raise(g_exc.invalid_type,
          what + ": expected a numpy.ndarray or an OrtValue, got " + std::string(Py_TYPE(obj.ptr())->tp_name) +
              (expected ? " (the model expects " + expectation(*expected) + ")" : std::string()),
          "INVALID_ARGUMENT");
  }
  auto a = py::reinterpret_borrow<py::array>(obj);
  bool swapped = false;
  DType dt = dtype_of(a.dtype(), &swapped);
  check_array(what, a, dt, swapped, expected);
  if (dt == DType::kString || a.size() == 0) return copy_array(a, dt);
  const void* data = a.data();
  if ((a.flags() & py::array::c_style) && reinterpret_cast<uintptr_t>(data) % 64 == 0) {
    // Shared, not copied: the tensor keeps the array alive (kernels only read inputs).
    PyObject* owner = a.ptr();
    Py_INCREF(owner);
    std::shared_ptr<std::byte> buf(static_cast<std::byte*>(const_cast<void*>(data)), [owner](std::byte*) {
      py::gil_scoped_acquire gil;
      Py_DECREF(owner);
    });
    return Tensor::wrap(dt, std::vector<int64_t>(a.shape(), a.shape() + a.ndim()), std::move(buf));
  }
  return copy_array(a, dt);
}

py::array array_from_tensor(const Tensor& t) {
  std::vector<py::ssize_t> dims(t.shape().begin(), t.shape().end());
  if (t.dtype() == DType::kString) {
    py::array out(numpy_dtype(DType::kString), dims);
    auto** p = static_cast<PyObject**>(out.mutable_data());
    const auto& s = t.strings();
    for (size_t i = 0; i < s.size(); ++i) {
      PyObject* u = PyUnicode_DecodeUTF8(s[i].data(), static_cast<Py_ssize_t>(s[i].size()), "replace");
      if (!u) throw py::error_already_set();
      Py_XDECREF(p[i]);
      p[i] = u;
    }
    return out;
  }
  py::dtype dt = numpy_dtype(t.dtype());
  if (t.numel() == 0 || !t.data()) return py::array(dt, dims);
  auto* holder = new Tensor(t);  // shares the buffer; freed with the array
  py::capsule base(holder, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(dt, dims, std::vector<py::ssize_t>{}, holder->data(), base);
}

}  // namespace ophost::python
