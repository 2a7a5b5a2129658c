// cq_core._core: the binding over src_cpp/engine — nothing else lives here (ARCHITECTURE.md §3.7).
// Arrow data cross as PyCapsules of the C Data Interface (the consumer moves the struct out), the
// GIL is released while the core works, and CqError becomes cq_core._core.CoreError(kind, message,
// stream, row), which cq_py maps to its own exceptions.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>

#include "arrow/bridge.h"
#include "batch/partition.h"
#include "engine/engine.h"
#include "engine/engine_group.h"
#include "engine/row_parts.h"
#include "kernels/registry.h"
#include "operators/registry.h"
#include "schedulers/swj_scheduler.h"
#include "txn/resource.h"
#include "txn/resource_store.h"
#include "txn/transaction_manager.h"

namespace py = pybind11;

namespace {

PyObject* g_core_error = nullptr;

// The kinds of error as CoreError names them (cq_py.errors.from_core maps them to its classes).
constexpr std::pair<cq::ErrorKind, const char*> kKindNames[] = {{cq::ErrorKind::kInput, "input"},
                                                                {cq::ErrorKind::kSemantic, "semantic"},
                                                                {cq::ErrorKind::kRunaway, "runaway"},
                                                                {cq::ErrorKind::kSnapshot, "snapshot"},
                                                                {cq::ErrorKind::kLockTimeout, "lock_timeout"}};

const char* KindName(cq::ErrorKind kind) {
  for (const auto& [k, name] : kKindNames)
    if (k == kind) return name;
  return "internal";
}

cq::ErrorKind KindFromName(const std::string& name) {
  for (const auto& [k, n] : kKindNames)
    if (name == n) return k;
  return cq::ErrorKind::kInternal;
}

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

// A timeout in seconds from Python (negative: none to wait) as the core's duration.
std::chrono::nanoseconds Seconds(double s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(std::max(0.0, s)));
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

// The rows (stamp, (schema, array)) a Python resource or model returned, checked against the
// columns it must have; kInput naming `what` otherwise.
std::pair<uint64_t, cq::ImportedBatch> ReadReturned(const py::object& r, const cq::Schema& want,
                                                    const std::string& what) {
  if (!py::isinstance<py::tuple>(r) || py::len(r) != 2)
    throw cq::CqError(cq::ErrorKind::kInput, what + " must return (version, Arrow capsules)");
  auto t = py::reinterpret_borrow<py::tuple>(r);
  cq::ImportedBatch b = ImportCapsules(t[1]);
  bool fits = b.columns.size() == want.size();
  for (size_t k = 0; fits && k < want.size(); ++k) fits = b.columns[k].type == want[k].type;
  if (!fits) {
    std::string w, f;
    for (const auto& x : want) w += (w.empty() ? "" : ", ") + x.name + " " + cq::CqlTypeName(x.type);
    for (size_t k = 0; k < b.columns.size(); ++k)
      f += (f.empty() ? "" : ", ") + b.names[k] + " " + cq::CqlTypeName(b.columns[k].type);
    throw cq::CqError(cq::ErrorKind::kInput, what + ": expected columns (" + w + "); found (" + f + ")");
  }
  return {t[0].cast<uint64_t>(), std::move(b)};
}

// A Python exception a reader raised on the core's behalf (a database resource's read failing, a
// model's callable raising), carried through the core as an input error — the kind an engine it
// stops reports afterwards ("the engine stopped at an earlier error"), not an internal error — and
// raised again as itself (the translator registered in the module).
class PythonRaised final : public cq::CqError {
 public:
  explicit PythonRaised(py::error_already_set e)
      : CqError(cq::ErrorKind::kInput, Describe(e)), error_(std::make_shared<py::error_already_set>(std::move(e))) {}
  void Restore() const { error_->restore(); }

 private:
  static std::string Describe(const py::error_already_set& e) {
    return py::str(e.type().attr("__name__")).cast<std::string>() + ": " + py::str(e.value()).cast<std::string>();
  }
  std::shared_ptr<py::error_already_set> error_;
};

// reader.name(args...), its Python exception a PythonRaised (the GIL held).
template <typename... A>
py::object CallReader(const py::object& reader, const char* name, A&&... args) {
  try {
    return reader.attr(name)(std::forward<A>(args)...);
  } catch (py::error_already_set& e) {
    throw PythonRaised(std::move(e));
  }
}

// A resource held by Python (a database table read through cq_py/io/databases.py): `reader` has
// lookup(keys) and scan(), each returning (stamp, Arrow capsules); called with the GIL, a batch of
// probes at a time.
class PyResource final : public cq::txn::Resource {
 public:
  PyResource(cq::txn::ResourceSpec spec, py::object reader) : Resource(std::move(spec)), reader_(std::move(reader)) {}
  ~PyResource() override {
    py::gil_scoped_acquire gil;
    reader_ = py::object();
  }
  cq::txn::ResourceRead Lookup(const cq::Columns& keys, int64_t n) override {
    py::gil_scoped_acquire gil;
    std::vector<std::string> names;
    for (int k : spec_.key) names.push_back(spec_.columns[k].name);
    cq::OutputChunk chunk;
    chunk.columns = keys;
    chunk.length = n;
    cq::txn::ResourceRead read = Read(CallReader(reader_, "lookup", ExportChunk(names, chunk)));
    cq::txn::MatchProbes(spec_, keys, n, read);
    return read;
  }
  cq::txn::ResourceRead Scan() override {
    py::gil_scoped_acquire gil;
    cq::txn::ResourceRead read = Read(CallReader(reader_, "scan"));
    read.rows_read = read.length;
    return read;
  }
  // The transaction managers' calls, forwarded to the reader's lock_shared(holder, timeout) ->
  // bool, unlock_shared(holder), pin(holder, timeout) -> a reader frozen at one state, and
  // stamp() -> int (cq_py checks they exist before it binds a reader under txn != "none").
  bool LockShared(const std::string& holder, std::chrono::nanoseconds timeout) override {
    py::gil_scoped_acquire gil;
    return CallReader(reader_, "lock_shared", holder, Seconds(timeout)).cast<bool>();
  }
  void UnlockShared(const std::string& holder) override {
    py::gil_scoped_acquire gil;
    reader_.attr("unlock_shared")(holder);
  }
  std::shared_ptr<cq::txn::Resource> Pin(const std::string& holder, std::chrono::nanoseconds timeout) override {
    py::gil_scoped_acquire gil;
    return std::make_shared<PyResource>(spec_, CallReader(reader_, "pin", holder, Seconds(timeout)));
  }
  uint64_t Stamp() override {
    py::gil_scoped_acquire gil;
    return CallReader(reader_, "stamp").cast<uint64_t>();
  }

 private:
  static double Seconds(std::chrono::nanoseconds t) { return std::chrono::duration<double>(t).count(); }
  cq::txn::ResourceRead Read(const py::object& r) {
    auto [version, b] = ReadReturned(r, spec_.columns, "resource '" + spec_.name + "'");
    cq::txn::ResourceRead read;
    read.version = version;
    read.length = b.length;
    for (auto& c : b.columns) read.columns.push_back(std::move(c));
    return read;
  }
  py::object reader_;
};

// A model held by Python (cq_py.resources.ModelReader over ResourceStore.set_model): apply(args)
// takes the argument columns as Arrow capsules and returns (version, result capsules), called
// with the GIL, a batch at a time. ModelApply checks the result's shape.
class PyModel final : public cq::txn::Model {
 public:
  explicit PyModel(py::object reader) : reader_(std::move(reader)) {}
  ~PyModel() override {
    py::gil_scoped_acquire gil;
    reader_ = py::object();
  }
  cq::txn::ModelResult Apply(const std::string&, const cq::Columns& args, const cq::Schema& arg_schema,
                             int64_t n) override {
    py::gil_scoped_acquire gil;
    cq::OutputChunk chunk;
    chunk.columns = args;
    chunk.length = n;
    py::object r;
    try {
      r = reader_.attr("apply")(ExportChunk(Names(arg_schema), chunk));
    } catch (py::error_already_set& e) {
      // The reader's package error (a wrong answer of the model) as the core's, of its kind: the
      // kind an engine it stops reports afterwards (not an internal error).
      if (!e.matches(g_core_error)) throw PythonRaised(std::move(e));
      const auto args = py::reinterpret_borrow<py::tuple>(e.value().attr("args"));
      throw cq::CqError(KindFromName(args[0].cast<std::string>()), args[1].cast<std::string>());
    }
    auto t = py::reinterpret_borrow<py::tuple>(r);
    cq::ImportedBatch b = ImportCapsules(t[1]);
    cq::txn::ModelResult out;
    out.version = t[0].cast<uint64_t>();
    for (auto& c : b.columns) out.columns.push_back(std::move(c));
    return out;
  }
  // The transaction managers' calls, forwarded to the reader (cq_py.resources.ModelReader).
  bool LockShared(const std::string& holder, std::chrono::nanoseconds timeout) override {
    py::gil_scoped_acquire gil;
    return reader_.attr("lock_shared")(holder, std::chrono::duration<double>(timeout).count()).cast<bool>();
  }
  void UnlockShared(const std::string& holder) override {
    py::gil_scoped_acquire gil;
    reader_.attr("unlock_shared")(holder);
  }
  std::shared_ptr<cq::txn::Model> Pin(const std::string& holder, std::chrono::nanoseconds timeout) override {
    py::gil_scoped_acquire gil;
    return std::make_shared<PyModel>(reader_.attr("pin")(holder, std::chrono::duration<double>(timeout).count()));
  }
  uint64_t Stamp() override {
    py::gil_scoped_acquire gil;
    return CallReader(reader_, "stamp").cast<uint64_t>();
  }

 private:
  py::object reader_;
};

[[noreturn]] void RowValueError(const std::string& stream, const std::string& column, const char* want,
                                py::handle value, const std::string& why = "") {
  throw cq::CqError(cq::ErrorKind::kInput,
                    "push_row to '" + stream + "': column '" + column + "' must be " + want + "; found " +
                        py::repr(value).cast<std::string>() + " (" + Py_TYPE(value.ptr())->tp_name + ")" + why,
                    stream);
}

// The 8-byte values of one row (BIGINT, DOUBLE, the timestamp) in one buffer, each column a view
// of its slot: one allocation per row rather than one per column, and one block for a window to
// keep while the row lives. (Columns are immutable: sharing a buffer is what slices do.)
struct RowWords {
  cq::Buffer block;
  int64_t used = 0;
  template <typename T>
  cq::Buffer Put(T x) {
    static_assert(sizeof(T) == 8);
    std::memcpy(block.data + used * 8, &x, 8);
    return cq::Buffer::Slice(block, 8 * used++, 8);
  }
};

// One value of a row as a column of length 1, converted as pyarrow converts a list of dicts and
// push() then casts it (cq_py.Engine._cast_column): any integer for BIGINT (bool is not one), an
// integer or a float for DOUBLE (an integer only where a double holds it exactly, as Arrow's safe
// cast), str for VARCHAR, bool for BOOLEAN, None for NULL. Python's own types take the first
// branch; numpy's scalars go through __index__ / __float__. Anything else (Decimal, bytes, a
// datetime) is refused, as push() refuses the Arrow column pyarrow makes of it.
cq::Column RowValue(cq::TypeId type, py::handle v, const std::string& stream, const std::string& column,
                    RowWords& words) {
  cq::Column c;
  c.type = type;
  c.length = 1;
  PyObject* o = v.ptr();
  if (o == Py_None) return cq::Column::Nulls(type, 1);
  // Python's own int and float, the common case, first: no type names read, no new references.
  if (PyLong_CheckExact(o) && type != cq::TypeId::kUtf8 && type != cq::TypeId::kBool) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    constexpr long long kExact = 1LL << 53;
    if (!overflow && (type == cq::TypeId::kInt64 || (x <= kExact && x >= -kExact))) {
      c.values = type == cq::TypeId::kInt64 ? words.Put(static_cast<int64_t>(x)) : words.Put(static_cast<double>(x));
      return c;
    }
  } else if (PyFloat_CheckExact(o) && type == cq::TypeId::kFloat64) {
    c.values = words.Put(PyFloat_AS_DOUBLE(o));
    return c;
  }
  const bool is_bool = PyBool_Check(o) || std::string_view(Py_TYPE(o)->tp_name) == "numpy.bool_" ||
                       std::string_view(Py_TYPE(o)->tp_name) == "numpy.bool";
  switch (type) {
    case cq::TypeId::kInt64: {
      if (is_bool || PyFloat_Check(o) || !PyIndex_Check(o)) RowValueError(stream, column, "BIGINT (an integer)", v);
      int overflow = 0;
      py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(o));
      if (!index) throw py::error_already_set();
      const long long x = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
      if (overflow) RowValueError(stream, column, "BIGINT (an integer)", v, ", which is outside int64");
      c.values = words.Put(static_cast<int64_t>(x));
      return c;
    }
    case cq::TypeId::kFloat64: {
      double x;
      if (PyFloat_Check(o)) {
        x = PyFloat_AS_DOUBLE(o);
      } else if (!is_bool && PyIndex_Check(o)) {
        int overflow = 0;
        py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(o));
        if (!index) throw py::error_already_set();
        const long long i = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
        constexpr long long kExact = 1LL << 53;
        if (overflow || i > kExact || i < -kExact)
          RowValueError(stream, column, "DOUBLE (a float, or an integer a double holds exactly)", v);
        x = static_cast<double>(i);
      } else if (!is_bool && std::string_view(Py_TYPE(o)->tp_name).starts_with("numpy.float") &&
                 Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float) {
        x = PyFloat_AsDouble(o);  // numpy.float32 and float16 (float64 is a float)
        if (x == -1.0 && PyErr_Occurred()) throw py::error_already_set();
      } else {
        RowValueError(stream, column, "DOUBLE (a float or an integer)", v);
      }
      c.values = words.Put(x);
      return c;
    }
    case cq::TypeId::kUtf8: {
      if (!PyUnicode_Check(o)) RowValueError(stream, column, "VARCHAR (a str)", v);
      Py_ssize_t n = 0;
      const char* p = PyUnicode_AsUTF8AndSize(o, &n);
      if (!p) {
        PyErr_Clear();
        RowValueError(stream, column, "VARCHAR (a str)", v, ", which is not valid UTF-8");
      }
      cq::FillStrings(c, 1, [&](int64_t) { return std::string_view(p, static_cast<size_t>(n)); });
      return c;
    }
    case cq::TypeId::kBool: {
      if (!is_bool) RowValueError(stream, column, "BOOLEAN (True or False)", v);
      c.values = cq::Buffer::Allocate(1);
      c.values.data[0] = PyObject_IsTrue(o) ? 1 : 0;
      return c;
    }
    case cq::TypeId::kNull: break;
  }
  RowValueError(stream, column, cq::CqlTypeName(type), v);
}

// One row from Python values in Engine::Push's form, with no Arrow object on the way: `values`
// maps column names to values, `names` are the stream's declared columns in order (for a
// relation, optionally "op" after them). False, with nothing done, when the row is not in that
// exact form — a name missing or more names given, `ts` not an int within the ticks — for cq_py to
// resolve (names in any case, datetimes) or refuse with its message. Values convert as push()
// converts a list of dicts (RowValue). The GIL stays held: releasing and taking it again would
// cost a good part of what one row costs in the core.
bool RowBatch(const cq::Schema& schema, const std::string& stream, py::handle ts, const py::dict& values,
              const py::tuple& names, cq::ImportedBatch& b) {
  PyObject* t = ts.ptr();
  if (!PyLong_CheckExact(t)) return false;
  int overflow = 0;
  const long long tick = PyLong_AsLongLongAndOverflow(t, &overflow);
  if (overflow || tick == cq::Time::kMinTick || tick == cq::Time::kInfTick) return false;
  const size_t n = static_cast<size_t>(PyTuple_GET_SIZE(names.ptr()));
  if (static_cast<size_t>(PyDict_GET_SIZE(values.ptr())) != n || (n != schema.size() && n != schema.size() + 1))
    return false;
  b.length = 1;
  b.columns.reserve(n + 1);
  RowWords words{cq::Buffer::Allocate(8 * static_cast<int64_t>(n + 1))};
  for (size_t c = 0; c < n; ++c) {
    PyObject* v = PyDict_GetItemWithError(values.ptr(), PyTuple_GET_ITEM(names.ptr(), c));
    if (!v) {
      if (PyErr_Occurred()) throw py::error_already_set();
      return false;
    }
    if (c < schema.size()) {
      b.columns.push_back(RowValue(schema[c].type, v, stream, schema[c].name, words));
    } else {  // a relation's op, whose values the core checks
      if (!PyUnicode_Check(v)) RowValueError(stream, "op", "'+' (insert) or '-' (delete)", v);
      b.columns.push_back(RowValue(cq::TypeId::kUtf8, v, stream, "op", words));
    }
  }
  cq::Column time;
  time.type = cq::TypeId::kInt64;
  time.length = 1;
  time.values = words.Put(static_cast<int64_t>(tick));
  b.columns.push_back(std::move(time));
  return true;
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
      const char* kind = KindName(e.kind());
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

  // Registered after CoreError's, so tried before it: a Python exception a reader raised is
  // raised again as itself.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const PythonRaised& e) {
      e.Restore();
    }
  });

  py::class_<cq::Engine>(m, "Engine")
      .def(py::init([](const std::string& lifetime, const std::string& executor, bool expose_steps, bool hybrid,
                       int64_t max_loop_steps, int64_t max_run, int64_t max_loop_ticks, int64_t max_loop_rows,
                       int64_t batch_size, const std::string& scheduler, int64_t batch, bool gatekeeper,
                       const std::string& txn, double lock_timeout, const std::string& redo) {
             return std::make_unique<cq::Engine>(
                 cq::EngineOptions{lifetime, executor, expose_steps, hybrid, max_loop_steps, max_run, max_loop_ticks,
                                   max_loop_rows, batch_size, scheduler, batch, gatekeeper, txn, lock_timeout, redo});
           }),
           py::arg("lifetime") = "direct", py::arg("executor") = "dts", py::arg("expose_steps") = false,
           py::arg("hybrid") = true, py::arg("max_loop_steps") = 1000000, py::arg("max_run") = 20,
           py::arg("max_loop_ticks") = 1000000, py::arg("max_loop_rows") = 10000000, py::arg("batch_size") = 65536,
           py::arg("scheduler") = "round_robin", py::arg("batch") = 1, py::arg("gatekeeper") = true,
           py::arg("txn") = "none", py::arg("lock_timeout") = 10.0, py::arg("redo") = "on_change")
      .def("add_plan", &cq::Engine::AddPlan, py::call_guard<py::gil_scoped_release>())
      .def("push",
           [](cq::Engine& e, const std::string& stream, const py::list& batches) {
             std::vector<cq::ImportedBatch> imported;
             imported.reserve(batches.size());
             for (const auto& b : batches) imported.push_back(ImportCapsules(b));
             py::gil_scoped_release release;
             e.Push(stream, std::move(imported));
           })
      // One row from Python values, with no Arrow object on the way: `values` maps column names to
      // values, `names` are the stream's declared columns in order (for a relation, optionally
      // "op" after them). False, with nothing done, when the row is not in that exact form — a
      // name missing or more names given, `ts` not an int within the ticks — for cq_py to
      // resolve (names in any case, datetimes) or refuse with its message. Values convert as
      // push() converts a list of dicts (RowValue). The GIL stays held: releasing and taking it
      // again would cost a good part of what one row costs in the core.
      .def("push_row",
           [](cq::Engine& e, const std::string& stream, py::handle ts, py::dict values, py::tuple names) {
             std::vector<cq::ImportedBatch> batch(1);
             if (!RowBatch(e.InputSchema(stream), stream, ts, values, names, batch[0])) return false;
             e.Push(stream, std::move(batch));
             return true;
           })
      .def(
          "check",
          [](const cq::Engine& e, const std::string& stream, const py::list& batches, bool deletes,
             const std::optional<py::array_t<int64_t, py::array::c_style | py::array::forcecast>>& rows) {
            std::vector<cq::ImportedBatch> imported;
            imported.reserve(batches.size());
            for (const auto& b : batches) imported.push_back(ImportCapsules(b));
            std::span<const int64_t> numbers;
            if (rows) numbers = {rows->data(), static_cast<size_t>(rows->size())};
            py::gil_scoped_release release;
            e.Check(stream, std::move(imported), deletes, numbers);
          },
          py::arg("stream"), py::arg("batches"), py::arg("deletes") = true, py::arg("rows") = py::none())
      .def(
          "advance_input",
          [](cq::Engine& e, const std::string& stream, int64_t tick) { e.AdvanceInput(stream, {tick, 0}); },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "advance_inputs",
          [](cq::Engine& e, const std::vector<std::string>& streams, int64_t tick) {
            e.AdvanceInputs(streams, {tick, 0});
          },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "advance", [](cq::Engine& e, int64_t tick, int64_t step) { e.Advance({tick, step}); }, py::arg("tick"),
          py::arg("step") = 0, py::call_guard<py::gil_scoped_release>())
      .def("close", &cq::Engine::Close, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("closed", &cq::Engine::closed)
      .def("watch", &cq::Engine::Watch, py::call_guard<py::gil_scoped_release>())
      .def("drain_watched",
           [](cq::Engine& e) {
             std::vector<std::pair<size_t, std::vector<cq::OutputChunk>>> drained;
             std::vector<std::vector<std::string>> names;
             {
               py::gil_scoped_release release;
               drained = e.DrainWatched();
               for (const auto& [k, chunks] : drained) names.push_back(Names(e.OutputSchema(e.watched()[k])));
             }
             py::list out;
             for (size_t d = 0; d < drained.size(); ++d) {
               py::list batches;
               for (const auto& c : drained[d].second) batches.append(ExportChunk(names[d], c));
               out.append(py::make_tuple(drained[d].first, batches));
             }
             return out;
           })
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
      .def("evaluations", &cq::Engine::Evaluations)
      .def("shared_join_report", &cq::Engine::SharedJoinReport)
      .def(
          "bind_store_resource",
          [](cq::Engine& e, const std::string& name, cq::txn::ResourceStore& store) {
            e.BindResource(name, std::make_shared<cq::txn::StoreResource>(&store, name));
          },
          py::keep_alive<1, 3>())
      .def("bind_resource",
           [](cq::Engine& e, const std::string& name, const std::vector<std::string>& names,
              const std::vector<std::string>& types, const std::vector<int>& key, py::object reader) {
             cq::txn::ResourceSpec spec{name, {}, key};
             for (size_t k = 0; k < names.size(); ++k)
               spec.columns.push_back({names[k], *cq::TypeFromName(types.at(k))});
             e.BindResource(name, std::make_shared<PyResource>(std::move(spec), std::move(reader)));
           })
      .def("bind_model", [](cq::Engine& e, const std::string& name,
                            py::object reader) { e.BindModel(name, std::make_shared<PyModel>(std::move(reader))); })
      .def("read_log",
           [](const cq::Engine& e) {
             const auto records = e.ReadLog();
             const auto n = static_cast<py::ssize_t>(records.size());
             py::array_t<int64_t> op(n), version(n), instant(n), rows(n), resource(n);
             std::vector<std::string> names;
             std::map<std::string, int64_t> code;
             for (py::ssize_t i = 0; i < n; ++i) {
               const auto& r = records[i];
               op.mutable_at(i) = r.op;
               version.mutable_at(i) = static_cast<int64_t>(r.version);
               instant.mutable_at(i) = r.instant.tick;
               rows.mutable_at(i) = r.rows;
               auto [it, fresh] = code.emplace(r.resource, static_cast<int64_t>(names.size()));
               if (fresh) names.push_back(r.resource);
               resource.mutable_at(i) = it->second;
             }
             return py::make_tuple(op, resource, names, version, instant, rows);
           })
      // (operator id, its reads) of every reference operator, all reads counted.
      .def("read_counts",
           [](const cq::Engine& e) {
             py::list out;
             for (const auto& [op, n] : e.reads().reads()) out.append(py::make_tuple(op, n));
             return out;
           })
      // (area, commits, aborts) of every redo area, all counted.
      .def("commit_counts",
           [](const cq::Engine& e) {
             py::list out;
             for (const auto& [area, n] : e.managers().outcomes()) out.append(py::make_tuple(area, n.first, n.second));
             return out;
           })
      // (reads, ends of transactions) dropped from the logs' fronts (each keeps its latest 2^20).
      .def("logs_dropped",
           [](const cq::Engine& e) { return py::make_tuple(e.reads().dropped(), e.managers().dropped()); })
      // The commit log as four record batches (cq::txn::CommitLogColumns), each (schema, array)
      // capsules: records, offsets (records + 1 rows), evaluations, versions.
      .def("commit_log",
           [](const cq::Engine& e) {
             cq::txn::CommitLogColumns log;
             {
               py::gil_scoped_release release;
               log = e.managers().log_columns();
             }
             py::tuple out(4);
             size_t i = 0;
             for (auto* t : {&log.records, &log.offsets, &log.evaluations, &log.versions})
               out[i++] = ExportChunk(t->names, {std::move(t->columns), t->length});
             return out;
           })
      // (holder ids in use, the holder table's size).
      .def("holder_table_size", &cq::Engine::HolderTableSize)
      // (area, query, lock waits, resets, rows replayed, transactions locked after aborts) of each redo
      // area's transaction manager.
      .def("transaction_managers",
           [](const cq::Engine& e) {
             py::list out;
             const auto& ms = e.managers();
             for (int64_t area : ms.areas()) {
               const cq::txn::TransactionManager* m = ms.Find(area);
               out.append(py::make_tuple(area, m->holder(), m->lock_waits(), m->resets(), m->replayed(),
                                         m->locked_after_aborts()));
             }
             return out;
           })
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

  // Engines driven as one (EngineGroup): each call runs on the group's threads, the GIL released
  // for all of it. The list of engines is kept alive by the group.
  py::class_<cq::EngineGroup>(m, "EngineGroup")
      .def(py::init([](const py::list& engines) {
             std::vector<cq::Engine*> v;
             for (const auto& e : engines) v.push_back(e.cast<cq::Engine*>());
             if (v.empty()) throw py::value_error("EngineGroup: no engine");
             return std::make_unique<cq::EngineGroup>(std::move(v));
           }),
           py::keep_alive<1, 2>())
      .def("push",
           [](cq::EngineGroup& g, const std::string& stream, const py::list& batches, int key, bool as_double,
              int64_t slice_rows, int64_t last) {
             std::vector<cq::ImportedBatch> imported;
             imported.reserve(batches.size());
             for (const auto& b : batches) imported.push_back(ImportCapsules(b));
             py::gil_scoped_release release;
             g.Push(stream, std::move(imported), key, as_double, slice_rows, last);
           })
      .def(
          "advance", [](cq::EngineGroup& g, int64_t tick) { g.Advance({tick, 0}); },
          py::call_guard<py::gil_scoped_release>())
      .def("close", &cq::EngineGroup::Close, py::call_guard<py::gil_scoped_release>())
      .def("drain", [](cq::EngineGroup& g, const std::string& query, const std::vector<int>& time, int64_t chunk_rows) {
        std::vector<cq::OutputChunk> chunks;
        std::vector<std::string> names;
        {
          py::gil_scoped_release release;
          chunks = g.Drain(query, time, chunk_rows);
          names = Names(g.engine(0).OutputSchema(query));
        }
        py::list out;
        for (const auto& c : chunks) out.append(ExportChunk(names, c));
        return out;
      });

  // A resource's rows by key (cq::txn::KeyIndex, what the core matches a lookup's probes with),
  // built once from a record batch of the key's columns: cq_py.resources.ResourceSnapshot's
  // lookups. match(probes) -> the row holding each probe's key (a batch of the key's columns, of
  // its types), -1 when none does.
  py::class_<cq::txn::KeyIndex>(m, "KeyIndex")
      .def(py::init([](const std::string& resource, const py::handle& rows) {
        cq::ImportedBatch b = ImportCapsules(rows);
        cq::txn::ResourceSpec spec{resource, {}, {}};
        cq::Columns columns;
        for (size_t k = 0; k < b.columns.size(); ++k) {
          spec.key.push_back(static_cast<int>(k));
          columns.push_back(std::move(b.columns[k]));
        }
        py::gil_scoped_release release;
        return std::make_unique<cq::txn::KeyIndex>(spec, columns, b.length);
      }))
      .def("match", [](const cq::txn::KeyIndex& index, const py::handle& probes) {
        cq::ImportedBatch p = ImportCapsules(probes);
        const auto& want = index.types();
        bool fits = p.columns.size() == want.size();
        for (size_t k = 0; fits && k < want.size(); ++k) fits = p.columns[k].type == want[k];
        if (!fits) {
          std::string w, f;
          for (cq::TypeId t : want) w += std::string(w.empty() ? "" : ", ") + cq::CqlTypeName(t);
          for (size_t k = 0; k < p.columns.size(); ++k)
            f += (f.empty() ? "" : ", ") + p.names[k] + " " + cq::CqlTypeName(p.columns[k].type);
          throw cq::CqError(cq::ErrorKind::kInput, "resource '" + index.resource() + "': probe keys of types (" + w +
                                                       ") expected; found (" + f + ")");
        }
        cq::Columns keys;
        for (auto& c : p.columns) keys.push_back(std::move(c));
        auto match = std::make_unique<std::vector<int64_t>>();
        {
          py::gil_scoped_release release;
          index.Match(keys, p.length, *match);
        }
        const auto n = static_cast<py::ssize_t>(match->size());
        int64_t* data = match->data();
        py::capsule owner(match.release(), [](void* v) { delete static_cast<std::vector<int64_t>*>(v); });
        return py::array_t<int64_t>(n, data, owner);
      });

  // The part of each row of a record batch of key columns among `parts` engines
  // (batch/partition.h): (order, counts), order listing the rows of part 0, then of part 1, ...
  m.def(
      "partition_rows",
      [](const py::handle& batch, int parts, bool as_double) {
        if (parts < 1) throw py::value_error("partition_rows: parts must be at least 1");
        cq::ImportedBatch keys = ImportCapsules(batch);
        py::array_t<int64_t> order(keys.length);
        std::vector<int64_t> counts(static_cast<size_t>(parts));
        int64_t* out = order.mutable_data();
        {
          py::gil_scoped_release release;
          cq::PartitionRows(keys.columns, keys.length, parts, as_double, out, counts.data());
        }
        return py::make_tuple(order, counts);
      },
      py::arg("batch"), py::arg("parts"), py::arg("as_double") = false);
  // The rows of one part among `parts` (RowsOfPart), as an int64 array.
  m.def(
      "part_rows",
      [](const py::handle& batch, int parts, int part, bool as_double) {
        if (parts < 1 || part < 0 || part >= parts) throw py::value_error("part_rows: no such part");
        cq::ImportedBatch keys = ImportCapsules(batch);
        auto* rows = new std::vector<int64_t>();
        {
          py::gil_scoped_release release;
          *rows = cq::RowsOfPart(keys.columns, keys.length, parts, part, as_double);
        }
        py::capsule owner(rows, [](void* v) { delete static_cast<std::vector<int64_t>*>(v); });
        return py::array_t<int64_t>(static_cast<py::ssize_t>(rows->size()), rows->data(), owner);
      },
      py::arg("batch"), py::arg("parts"), py::arg("part"), py::arg("as_double") = false);
  // The drained outputs of several parts (a list of drain()'s lists, one per part, each in time
  // order) merged in time order (MergeByTime: by the int64 columns `time`), as record batches of at
  // most `chunk_rows` rows.
  m.def(
      "merge_by_time",
      [](const py::list& parts, const std::vector<int>& time, int64_t chunk_rows) {
        std::vector<std::vector<cq::TimedChunk>> in;
        std::vector<std::string> names;
        for (const auto& part : parts) {
          in.emplace_back();
          for (const auto& pair : part.cast<py::list>()) {
            cq::ImportedBatch b = ImportCapsules(pair);
            if (names.empty()) names = b.names;
            in.back().push_back({std::vector<cq::Column>(b.columns.begin(), b.columns.end()), b.length});
          }
        }
        for (int c : time)
          if (c < 0 || static_cast<size_t>(c) >= names.size()) throw py::value_error("merge_by_time: no such column");
        std::vector<cq::TimedChunk> merged;
        {
          py::gil_scoped_release release;
          merged = cq::MergeByTime(in, time, chunk_rows < 1 ? 1 : chunk_rows);
        }
        py::list out;
        for (cq::TimedChunk& c : merged) {
          cq::OutputChunk chunk;
          for (cq::Column& col : c.columns) chunk.columns.push_back(std::move(col));
          chunk.length = c.length;
          out.append(ExportChunk(names, chunk));
        }
        return out;
      },
      py::arg("parts"), py::arg("time"), py::arg("chunk_rows") = 65536);
  // Engine(threads=N)'s engines fed one row at a time (engine/row_parts.h). push_row is
  // Engine.push_row's: the row converted in the same way (RowBatch; False when it is not in that
  // exact form), then pushed to the engine of its key alone.
  py::class_<cq::RowParts>(m, "RowParts")
      .def(py::init([](const py::list& engines) {
             std::vector<cq::Engine*> e;
             for (py::handle h : engines) e.push_back(h.cast<cq::Engine*>());
             return std::make_unique<cq::RowParts>(std::move(e));
           }),
           py::keep_alive<1, 2>())
      .def("set_key", &cq::RowParts::SetKey)
      .def("push_row",
           [](cq::RowParts& r, const std::string& stream, py::handle ts, py::dict values, py::tuple names) {
             std::vector<cq::ImportedBatch> batch(1);
             if (!RowBatch(r.InputSchema(stream), stream, ts, values, names, batch[0])) return false;
             r.Push(stream, std::move(batch));
             return true;
           })
      .def("moved", &cq::RowParts::Moved)
      .def("catch_up", &cq::RowParts::CatchUp, py::call_guard<py::gil_scoped_release>())
      .def("progress", &cq::RowParts::Progress)
      .def("stop",
           [](cq::RowParts& r, const std::string& kind, const std::string& what) {
             r.Stop(kind == "runaway" ? cq::ErrorKind::kRunaway : cq::ErrorKind::kInternal, what);
           })
      .def("check_usable", &cq::RowParts::CheckUsable);

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

  // A shared window join's MQT segments (schedulers/swj_scheduler.h), for explain: the segments
  // as (j, k] pairs, their text as paper 004 §6.2 writes orders, and each query's weight.
  m.def("mqt_segments", [](const std::vector<int64_t>& windows) {
    const cq::swj::MqtMatrix m(windows);
    std::vector<double> weights;
    for (int q = 1; q <= m.n(); ++q) weights.push_back(m.Weight(q));
    return py::make_tuple(m.segments(), m.SegmentsText(), weights);
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

  // The in-process store of updatable resources (paper 002; txn/resource_store.h). Changes come as
  // (resource, kind, Arrow capsules); commits and lock waits release the GIL.
  py::class_<cq::txn::ResourceStore>(m, "ResourceStore")
      .def(py::init<>())
      .def("define",
           [](cq::txn::ResourceStore& s, const std::string& name, const std::vector<std::string>& names,
              const std::vector<std::string>& types, const std::vector<int>& key) {
             cq::txn::ResourceSpec spec{name, {}, key};
             for (size_t k = 0; k < names.size(); ++k) {
               const auto t = cq::TypeFromName(types.at(k));
               if (!t) throw cq::CqError(cq::ErrorKind::kInput, "resource '" + name + "': unknown type " + types[k]);
               spec.columns.push_back({names[k], *t});
             }
             s.Define(std::move(spec));
           })
      .def("define_model", &cq::txn::ResourceStore::DefineModel)
      .def("undefine", &cq::txn::ResourceStore::Undefine)
      .def(
          "begin_exclusive",
          [](cq::txn::ResourceStore& s, const std::vector<std::string>& names, double timeout_s) {
            s.BeginExclusive(names, Seconds(timeout_s));
          },
          py::call_guard<py::gil_scoped_release>())
      .def("end_exclusive", &cq::txn::ResourceStore::EndExclusive)
      .def("has", &cq::txn::ResourceStore::Has)
      .def("names", &cq::txn::ResourceStore::Names)
      .def("spec",
           [](const cq::txn::ResourceStore& s, const std::string& name) {
             const cq::txn::ResourceSpec spec = s.Spec(name);
             std::vector<std::string> names, types;
             for (const auto& f : spec.columns) {
               names.push_back(f.name);
               types.emplace_back(cq::TypeName(f.type));
             }
             return py::make_tuple(names, types, spec.key);
           })
      .def("commit",
           [](cq::txn::ResourceStore& s, const py::list& changes, double timeout_s, const std::string& writer) {
             std::vector<cq::txn::ResourceChange> cs;
             for (const auto& item : changes) {
               auto t = py::reinterpret_borrow<py::tuple>(item);
               const auto kind = t[1].cast<std::string>();
               cq::ImportedBatch b = ImportCapsules(t[2]);
               cq::txn::ResourceChange c{t[0].cast<std::string>(),
                                         kind == "delete"    ? cq::txn::ChangeKind::kDelete
                                         : kind == "replace" ? cq::txn::ChangeKind::kReplace
                                                             : cq::txn::ChangeKind::kUpsert,
                                         {},
                                         b.length};
               for (auto& col : b.columns) c.columns.push_back(std::move(col));
               cs.push_back(std::move(c));
             }
             py::gil_scoped_release release;
             return s.Commit(cs, Seconds(timeout_s), writer);
           })
      .def("current",
           [](const cq::txn::ResourceStore& s, const std::string& name) {
             const auto v = s.Current(name);
             std::vector<std::string> names;
             for (const auto& f : s.Spec(name).columns) names.push_back(f.name);
             cq::OutputChunk chunk;
             chunk.columns = v->columns;
             chunk.length = v->length;
             return py::make_tuple(v->version, ExportChunk(names, chunk));
           })
      .def(
          "lock_shared",
          [](cq::txn::ResourceStore& s, const std::string& name, const std::string& holder, double timeout_s) {
            return s.LockShared(name, holder, Seconds(timeout_s));
          },
          py::call_guard<py::gil_scoped_release>())
      .def("unlock_shared", &cq::txn::ResourceStore::UnlockShared)
      .def("holders", &cq::txn::ResourceStore::Holders)
      .def("version", &cq::txn::ResourceStore::version)
      .def("update_log", [](const cq::txn::ResourceStore& s) {
        py::list out;
        for (const auto& r : s.UpdateLog())
          out.append(py::make_tuple(r.version, r.at_ns, r.writer, r.resources, r.upserted, r.deleted));
        return out;
      });
}
