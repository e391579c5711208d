// DLPack both ways: OrtValue.__dlpack__ / __dlpack_device__ and ophost.from_dlpack. The tensor layout is the
// SDK's oph_tensor, which is DLPack's DLTensor; DLManagedTensor (DLPack's stable ABI) adds the owner and its
// deleter. Zero-copy whenever the producer's layout is C-contiguous; strided tensors are copied.
#include "common.hpp"

#include <cstring>

namespace ophost::python {

namespace {

struct DLManagedTensor {
  oph_tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

// What one exported tensor owns: a reference to the buffer and its own shape array.
struct Export {
  Tensor tensor;
  std::vector<int64_t> shape;
  DLManagedTensor managed{};
};

void delete_export(DLManagedTensor* m) { delete static_cast<Export*>(m->manager_ctx); }

void capsule_destructor(PyObject* capsule) {
  // Never consumed: the capsule still owns the tensor.
  if (PyCapsule_IsValid(capsule, kCapsuleName)) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
    if (m && m->deleter) m->deleter(m);
  }
}

}  // namespace

py::capsule to_dlpack(const Tensor& t) {
  if (t.empty() || t.dtype() == DType::kString) {
    raise(g_exc.invalid_argument, std::string("DLPack cannot carry ") + ort_type(t.dtype()) + " tensors",
          "INVALID_ARGUMENT");
  }
  auto* e = new Export{t, std::vector<int64_t>(t.shape().begin(), t.shape().end()), {}};
  e->managed.dl_tensor = e->tensor.view();
  e->managed.dl_tensor.shape = e->shape.data();
  e->managed.dl_tensor.strides = nullptr;  // C-contiguous
  e->managed.manager_ctx = e;
  e->managed.deleter = delete_export;
  PyObject* cap = PyCapsule_New(&e->managed, kCapsuleName, capsule_destructor);
  if (!cap) {
    delete e;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

Tensor from_dlpack(py::handle obj) {
  py::object cap;
  if (PyCapsule_CheckExact(obj.ptr())) {
    cap = py::reinterpret_borrow<py::object>(obj);
  } else if (py::hasattr(obj, "__dlpack__")) {
    cap = obj.attr("__dlpack__")();
  } else {
    raise(g_exc.invalid_type,
          std::string("from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got ") +
              Py_TYPE(obj.ptr())->tp_name,
          "INVALID_ARGUMENT");
  }
  if (!PyCapsule_IsValid(cap.ptr(), kCapsuleName)) {
    raise(g_exc.invalid_argument, "from_dlpack: the capsule is not an unconsumed 'dltensor' (each can be used once)",
          "INVALID_ARGUMENT");
  }
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), kCapsuleName));
  const oph_tensor& dl = m->dl_tensor;
  auto release = [m] {
    if (m->deleter) {
      py::gil_scoped_acquire gil;
      m->deleter(m);
    }
  };
  // The capsule is ours from here: its deleter runs exactly once, by us.
  if (PyCapsule_SetName(cap.ptr(), kUsedCapsuleName) != 0) throw py::error_already_set();
  if (dl.device.device_type != OPH_DL_CPU && dl.device.device_type != OPH_DL_CUDA_HOST &&
      dl.device.device_type != OPH_DL_ROCM_HOST) {
    release();
    raise(g_exc.not_implemented,
          "from_dlpack: the tensor is on device type " + std::to_string(dl.device.device_type) +
              " (DLPack numbering); ophost's Python API takes host (CPU) tensors only",
          "NOT_IMPLEMENTED");
  }
  oph_dtype code = dl.dtype;
  DType dtype = from_dl(code);
  if (dtype == DType::kUndefined && code.code == 1 /* kDLUInt */ && code.bits == 8 && code.lanes == 1) dtype = DType::kUint8;
  if (dtype == DType::kUndefined) {
    release();
    raise(g_exc.invalid_type,
          "from_dlpack: DLPack dtype {code " + std::to_string(code.code) + ", bits " + std::to_string(code.bits) +
              ", lanes " + std::to_string(code.lanes) + "} has no ONNX tensor type",
          "INVALID_ARGUMENT");
  }
  std::vector<int64_t> shape(dl.shape, dl.shape + dl.ndim);
  const size_t esize = dtype_size(dtype);
  auto* base = static_cast<std::byte*>(dl.data) + dl.byte_offset;
  bool contiguous = true;
  if (dl.strides) {
    int64_t expect = 1;
    for (int k = dl.ndim - 1; k >= 0; --k) {
      if (shape[k] != 1 && dl.strides[k] != expect) contiguous = false;
      expect *= shape[k];
    }
  }
  int64_t numel = shape_numel(shape);
  if (numel == 0 || !contiguous) {
    Tensor t(dtype, shape);
    if (numel > 0) {
      // Strided: copy element by element in C order.
      std::vector<int64_t> idx(shape.size(), 0);
      auto* out = static_cast<std::byte*>(t.data());
      for (int64_t i = 0; i < numel; ++i) {
        int64_t off = 0;
        for (size_t k = 0; k < shape.size(); ++k) off += idx[k] * dl.strides[k];
        std::memcpy(out + i * esize, base + off * static_cast<int64_t>(esize), esize);
        for (int k = static_cast<int>(shape.size()) - 1; k >= 0; --k) {
          if (++idx[k] < shape[k]) break;
          idx[k] = 0;
        }
      }
    }
    release();
    return t;
  }
  std::shared_ptr<std::byte> buf(base, [release](std::byte*) { release(); });
  return Tensor::wrap(dtype, std::move(shape), std::move(buf));
}

}  // namespace ophost::python
