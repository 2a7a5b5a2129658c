// cq_core._core: the binding over src_cpp/engine — nothing else lives here (ARCHITECTURE.md §3.7).
// Arrow data cross as PyCapsules of the C Data Interface (the consumer moves the struct out), the
// GIL is released while the core works, and CqError becomes cq_core._core.CoreError(kind, message,
// stream, row), which cq_py maps to its own exceptions.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "arrow/bridge.h"
#include "engine/engine.h"
#include "kernels/registry.h"
#include "operators/registry.h"

namespace py = pybind11;

namespace {

PyObject* g_core_error = nullptr;

void ReleaseSchemaCapsule(PyObject* cap) {
  auto* s = static_cast<ArrowSchema*>(PyCapsule_GetPointer(cap, "arrow_schema"));
  if (s) {
    if (s->release) s->release(s);
    delete s;
  }
}

void ReleaseArrayCapsule(PyObject* cap) {
  auto* a = static_cast<ArrowArray*>(PyCapsule_GetPointer(cap, "arrow_array"));
  if (a) {
    if (a->release) a->release(a);
    delete a;
  }
}

py::tuple ExportChunk(const std::vector<std::string>& names, const cq::OutputChunk& chunk) {
  auto* schema = new ArrowSchema;
  auto* array = new ArrowArray;
  cq::ExportStruct(names, chunk.columns, chunk.length, schema, array);
  py::object s = py::reinterpret_steal<py::object>(PyCapsule_New(schema, "arrow_schema", ReleaseSchemaCapsule));
  py::object a = py::reinterpret_steal<py::object>(PyCapsule_New(array, "arrow_array", ReleaseArrayCapsule));
  return py::make_tuple(s, a);
}

cq::ImportedBatch ImportCapsules(const py::handle& pair) {
  auto t = py::reinterpret_borrow<py::tuple>(pair);
  auto* schema = static_cast<ArrowSchema*>(PyCapsule_GetPointer(t[0].ptr(), "arrow_schema"));
  auto* array = static_cast<ArrowArray*>(PyCapsule_GetPointer(t[1].ptr(), "arrow_array"));
  if (!schema || !array) throw py::error_already_set();
  return cq::ImportStruct(schema, array);
}

std::vector<std::string> Names(const cq::Schema& s) {
  std::vector<std::string> n;
  for (const auto& f : s) n.push_back(f.name);
  return n;
}

// The bytes of a contiguous buffer (bytes, bytearray, a memoryview of one), without a copy.
std::string_view BufferBytes(const py::buffer& data, const py::buffer_info& info) {
  if (info.ndim > 1 || (info.ndim == 1 && info.strides[0] != info.itemsize))
    throw py::type_error("a snapshot must be a contiguous bytes-like object");
  return {static_cast<const char*>(info.ptr), static_cast<size_t>(info.size * info.itemsize)};
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "cq's C++ core (private; use cq_py)";

  static py::exception<std::runtime_error> core_error(m, "CoreError");
  g_core_error = core_error.ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const cq::CqError& e) {
      const char* kind = e.kind() == cq::ErrorKind::kInput      ? "input"
                         : e.kind() == cq::ErrorKind::kSemantic ? "semantic"
                         : e.kind() == cq::ErrorKind::kRunaway  ? "runaway"
                         : e.kind() == cq::ErrorKind::kSnapshot ? "snapshot"
                                                                : "internal";
      py::object row = e.row() < 0 ? py::object(py::none()) : py::object(py::int_(e.row()));
      py::object stream = e.stream().empty() ? py::object(py::none()) : py::object(py::str(e.stream()));
      // A message may quote bytes that are not UTF-8 (a damaged snapshot's): escaped, not an error.
      const std::string_view what = e.what();
      py::object message = py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(what.data(), static_cast<Py_ssize_t>(what.size()), "backslashreplace"));
      py::tuple args = py::make_tuple(kind, message, stream, row);
      PyErr_SetObject(g_core_error, args.ptr());
    }
  });

  py::class_<cq::Engine>(m, "Engine")
      .def(py::init([](const std::string& lifetime, const std::string& executor, bool expose_steps, bool hybrid,
                       int64_t max_loop_steps, int64_t max_run, int64_t max_loop_ticks, int64_t max_loop_rows) {
             return std::make_unique<cq::Engine>(cq::EngineOptions{
                 lifetime, executor, expose_steps, hybrid, max_loop_steps, max_run, max_loop_ticks, max_loop_rows});
           }),
           py::arg("lifetime") = "direct", py::arg("executor") = "dts", py::arg("expose_steps") = false,
           py::arg("hybrid") = true, py::arg("max_loop_steps") = 1000000, py::arg("max_run") = 20,
           py::arg("max_loop_ticks") = 1000000, py::arg("max_loop_rows") = 10000000)
      .def("add_plan", &cq::Engine::AddPlan, py::call_guard<py::gil_scoped_release>())
      .def("push",
           [](cq::Engine& e, const std::string& stream, const py::list& batches) {
             std::vector<cq::ImportedBatch> imported;
             imported.reserve(batches.size());
             for (const auto& b : batches) imported.push_back(ImportCapsules(b));
             py::gil_scoped_release release;
             e.Push(stream, std::move(imported));
           })
      .def(
          "advance", [](cq::Engine& e, int64_t tick, int64_t step) { e.Advance({tick, step}); }, py::arg("tick"),
          py::arg("step") = 0, py::call_guard<py::gil_scoped_release>())
      .def("close", &cq::Engine::Close, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("closed", &cq::Engine::closed)
      .def("drain",
           [](cq::Engine& e, const std::string& query) {
             std::vector<cq::OutputChunk> chunks;
             std::vector<std::string> names;
             {
               py::gil_scoped_release release;
               chunks = e.Drain(query);
               names = Names(e.OutputSchema(query));
             }
             py::list out;
             for (const auto& c : chunks) out.append(ExportChunk(names, c));
             return out;
           })
      .def("output_schema",
           [](const cq::Engine& e, const std::string& query) {
             py::list fields;
             for (const auto& f : e.OutputSchema(query))
               fields.append(py::make_tuple(f.name, std::string(cq::TypeName(f.type))));
             return fields;
           })
      .def("queries", &cq::Engine::Queries)
      .def("explain", &cq::Engine::Explain)
      // Snapshots cross as bytes: one copy out (std::string -> bytes); in, the caller's buffer is
      // read where it is.
      .def(
          "snapshot",
          [](const cq::Engine& e, const py::bytes& annex) {
            const std::string_view a = annex;
            std::string s;
            {
              py::gil_scoped_release release;
              s = e.Snapshot(a);
            }
            return py::bytes(s);
          },
          py::arg("annex") = py::bytes())
      .def("restore", [](cq::Engine& e, const py::buffer& data) {
        const py::buffer_info info = data.request();
        const std::string_view s = BufferBytes(data, info);
        py::gil_scoped_release release;
        e.Restore(s);
      });

  m.def("snapshot_annex", [](const py::buffer& data) {
    const py::buffer_info info = data.request();
    return py::bytes(cq::Engine::SnapshotAnnex(BufferBytes(data, info)));
  });

  // What each operator is (operators/descriptor.h), for the planner, explain and the Spark runner.
  m.def("operator_descriptors", [] {
    const cq::OperatorRegistry& r = cq::OperatorRegistry::Global();
    py::list out;
    for (const cq::OperatorDescriptor* d : r.descriptors()) {
      py::dict e;
      e["name"] = d->name;
      e["description"] = d->description;
      e["output"] = cq::Name(d->output);
      e["firing"] = cq::Name(d->firing);
      e["lifetimes"] = cq::Name(d->lifetimes);
      e["partition"] = cq::Name(d->partition);
      e["columns"] = cq::Name(d->columns);
      e["role"] = cq::Name(d->role);
      e["keeps_identity"] = d->keeps_identity;
      e["shareable"] = d->shareable;
      e["tracks_lifetimes"] = d->tracks_lifetimes;
      e["arrival_order"] = d->arrival_order;
      e["negative_form"] = r.has_negative(d->name);
      out.append(e);
    }
    return out;
  });

  // The profile-guided build's stage this core was compiled at (setup.py): USE when profile-guided,
  // OFF without, GENERATE for the instrumented core of the training run. Benchmarks report it.
  m.attr("pgo") = CQ_PGO_STAGE;

  m.def("kernel_signatures", [] {
    py::list out;
    for (const auto& k : cq::KernelRegistry::Global().kernels()) {
      py::list args;
      for (auto t : k.args) args.append(std::string(cq::TypeName(t)));
      out.append(py::make_tuple(k.name, args, std::string(cq::TypeName(k.result)), k.doc, k.repeat));
    }
    return out;
  });
}
