"""ophost: run ONNX models through ophost's plugin host from Python.

The session API is ONNX Runtime's, so code written for onnxruntime runs after ``import ophost as onnxruntime``::

    import numpy as np
    import ophost

    so = ophost.SessionOptions()
    so.register_custom_ops_library("build/lib/ophost/plugins/myops")   # a pack folder, or the library in one
    sess = ophost.InferenceSession("examples/models/mixed_small.onnx", so)
    (y,) = sess.run(None, {"x": np.ones((2, 8), np.float32)})

Plugins are found as the ``ophost`` command finds them: packs registered in the SessionOptions first, then
``$OPHOST_PLUGIN_PATH`` (colon-separated), then the ``lib/ophost/plugins`` folder of the installation this
package belongs to (the build tree's when run from ``build/python``). ``$OPHOST_PLUGINS_DISABLE`` and
``$OPHOST_LOG_LEVEL`` work as for the command. Errors raise :class:`OphostError` subclasses carrying the host's
message. See docs/python.md for what is supported, what differs from onnxruntime and what is not there yet.
"""

import os as _os

from . import _layout
from . import _ophost
from ._ophost import (
    EPFail,
    ExecutionMode,
    ExecutionOrder,
    Fail,
    GraphOptimizationLevel,
    InferenceSession,
    InvalidArgument,
    InvalidGraph,
    InvalidType,
    IOBinding,
    ModelMetadata,
    NodeArg,
    NodeOutputs,
    NoSuchFile,
    NotImplemented,
    OphostError,
    OrtValue,
    RunOptions,
    RuntimeException,
    SessionOptions,
    from_dlpack,
    get_all_providers,
    get_available_providers,
    get_device,
    plugins,
    set_default_logger_severity,
)

__version__ = _ophost.__version__

# The Python counterpart of the command's <exe>/../lib/ophost/plugins: the plugin folder of the installation
# (or build tree) this package sits in.
_ophost._set_default_plugin_dir(
    _os.path.normpath(_os.path.join(_os.path.dirname(_os.path.realpath(__file__)), _layout.PLUGIN_DIR)))

# onnxruntime spells the I/O binding class SessionIOBinding at the C level.
SessionIOBinding = IOBinding


def get_version_string():
    """The ophost version (onnxruntime's get_version_string)."""
    return __version__


def get_build_info():
    """A one-line description of this build."""
    return "ophost " + __version__ + " (plugins: " + _ophost._default_plugin_dir() + ")"


__all__ = [
    "EPFail", "ExecutionMode", "ExecutionOrder", "Fail", "GraphOptimizationLevel", "InferenceSession",
    "InvalidArgument", "InvalidGraph", "InvalidType", "IOBinding", "ModelMetadata", "NodeArg", "NodeOutputs",
    "NoSuchFile", "NotImplemented", "OphostError", "OrtValue", "RunOptions", "RuntimeException", "SessionIOBinding",
    "SessionOptions", "from_dlpack", "get_all_providers", "get_available_providers", "get_build_info", "get_device",
    "get_version_string", "plugins", "set_default_logger_severity",
]
