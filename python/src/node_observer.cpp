// InferenceSession.run(..., on_node=callback): Session::run with a NodeObserver that hands each node's outputs to
// a Python callable as an ophost.NodeOutputs. The run itself holds no GIL; each call takes it. An exception the
// callable raises stops the run (the observer throws an ophost::Error, which ends the run) and is re-raised from
// run() as it was raised (same object: type, message, traceback).
#include "common.hpp"

#include <exception>

namespace ophost::python {

namespace {

// What on_node(info) receives.
struct PyNodeOutputs {
  size_t index = 0;
  std::string node, op, pack, device;
  py::dict outputs;                  // value name -> numpy.ndarray (a copy, the callback's to keep)
  std::vector<std::string> skipped;  // "<value name>: <reason>"
};

PyNodeOutputs to_python(const NodeOutputs& n) {
  PyNodeOutputs p;
  p.index = n.index;
  p.node = n.node;
  p.op = n.op;
  p.pack = n.pack;
  p.device = n.device;
  p.skipped = n.skipped;
  for (const NamedTensor& out : n.outputs) {
    if (out.tensor.dtype() == DType::kBFloat16) {
      p.skipped.push_back(out.name + ": dtype bfloat16 has no NumPy dtype");
      continue;
    }
    p.outputs[py::str(out.name)] = array_from_tensor(out.tensor);  // shares the copy's buffer, no second copy
  }
  return p;
}

}  // namespace

std::vector<NamedTensor> run_observed(Session& session, const std::vector<NamedTensor>& inputs, py::handle on_node) {
  if (!PyCallable_Check(on_node.ptr())) {
    raise(g_exc.invalid_type,
          std::string("on_node must be a callable taking one argument (an ophost.NodeOutputs) or None, got ") +
              Py_TYPE(on_node.ptr())->tp_name,
          "INVALID_ARGUMENT");
  }
  py::object callback = py::reinterpret_borrow<py::object>(on_node);
  std::exception_ptr raised;  // the callback's Python exception (a py::error_already_set), re-raised after the run
  const NodeObserver observer = [&](const NodeOutputs& n) {
    py::gil_scoped_acquire gil;
    try {
      callback(to_python(n));
    } catch (py::error_already_set&) {
      raised = std::current_exception();
      throw Error(Code::kAborted, "node '" + n.node + "': on_node raised an exception");
    }
  };
  std::vector<NamedTensor> out;
  try {
    py::gil_scoped_release nogil;
    out = session.run(inputs, observer);
  } catch (const Error&) {
    if (raised) std::rethrow_exception(raised);  // the callback's own exception, unchanged
    throw;
  }
  return out;
}

void bind_node_outputs(py::module_& m) {
  py::class_<PyNodeOutputs>(m, "NodeOutputs",
                            "One node's outputs, given to InferenceSession.run's on_node callback after the node "
                            "has computed (nodes as they run after optimisation; nodes inside If/Loop/Scan bodies "
                            "are not observed).")
      .def_readonly("index", &PyNodeOutputs::index,
                    "Position of the node in execution order (nodes may complete out of this order in parallel "
                    "execution mode).")
      .def_readonly("node", &PyNodeOutputs::node, "The node's name.")
      .def_readonly("op", &PyNodeOutputs::op, "'domain::op_type' (the op type alone for the standard domain).")
      .def_readonly("pack", &PyNodeOutputs::pack, "The operator pack whose kernel ran the node.")
      .def_readonly("device", &PyNodeOutputs::device, "The device it ran on ('cpu', ...).")
      .def_readonly("outputs", &PyNodeOutputs::outputs,
                    "{value name: numpy.ndarray}: copies of the node's outputs, yours to keep.")
      .def_readonly("skipped", &PyNodeOutputs::skipped,
                    "'<value name>: <reason>' for each output not copied (on another device than the CPU, a dtype "
                    "NumPy lacks such as bfloat16, not allocated).")
      .def("__repr__", [](const PyNodeOutputs& n) {
        std::string names;
        for (auto [k, v] : n.outputs) names += (names.empty() ? "" : ", ") + std::string(py::str(k));
        return "<NodeOutputs " + std::to_string(n.index) + " '" + n.node + "' (" + n.op + ", " + n.pack + ", " +
               n.device + ") outputs [" + names + "]" +
               (n.skipped.empty() ? std::string() : " skipped " + std::to_string(n.skipped.size())) + ">";
      });
}

}  // namespace ophost::python
