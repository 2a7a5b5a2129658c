// The row layer of loop regions (rows/ROWS.md): row expressions against the columnar kernels they
// stand in for, the RowStore, the RowBatchBuilder at region exits, and the row trackers of
// ISTREAM/DSTREAM/RSTREAM and the aggregate.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/json.h"
#include "batch/snapshot.h"
#include "kernels/expression.h"
#include "kernels/registry.h"
#include "operators/union_all.h"
#include "rows/batch_rows.h"
#include "rows/instants.h"
#include "rows/row.h"
#include "rows/row_expression.h"
#include "rows/row_tracker.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr auto N = std::nullopt;

// ---- test values -----------------------------------------------------------------------------

// One value of any type, as the tests write it down.
struct TV {
  TypeId type = TypeId::kNull;
  bool valid = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
};

TV NullOf(TypeId t) { return TV{t, false, 0, 0, {}}; }
TV I(int64_t v) { return TV{TypeId::kInt64, true, v, 0, {}}; }
TV D(double v) { return TV{TypeId::kFloat64, true, 0, v, {}}; }
TV B(bool v) { return TV{TypeId::kBool, true, v ? 1 : 0, 0, {}}; }
TV S(std::string v) { return TV{TypeId::kUtf8, true, 0, 0, std::move(v)}; }

std::string ShowTV(const TV& v) {
  if (!v.valid) return "NULL";
  char buf[64];
  switch (v.type) {
    case TypeId::kInt64: return std::to_string(v.i);
    case TypeId::kFloat64: std::snprintf(buf, sizeof buf, "%.17g", v.d); return buf;
    case TypeId::kBool: return v.i ? "TRUE" : "FALSE";
    case TypeId::kUtf8: return Quote(v.s);
    case TypeId::kNull: break;
  }
  return "NULL";
}

// The edge cases of each type. `literal`: only those a plan's JSON can spell (no NaN or ±Inf).
std::vector<TV> Edges(TypeId t, bool literal) {
  std::vector<TV> v{NullOf(t)};
  switch (t) {
    case TypeId::kInt64:
      for (int64_t x : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{2}, int64_t{-2}, int64_t{3}, int64_t{7},
                        int64_t{-7}, kMin, kMax, int64_t{9007199254740993}})
        v.push_back(I(x));
      break;
    case TypeId::kFloat64:
      for (double x : {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e308, -1e308, 5e-324, 9.3e18, -9.3e18,
                       9223372036854775808.0, -9223372036854775808.0})
        v.push_back(D(x));
      if (!literal)
        for (double x : {kNaN, -kNaN, kInf, -kInf}) v.push_back(D(x));
      break;
    case TypeId::kUtf8:
      for (const char* x : {"", "a", "ab", "abc", "b", " 12 ", "-3.5", "true", "NaN", "\xc3\xa9", "1e3", "0x1p3", "A"})
        v.push_back(S(x));
      break;
    case TypeId::kBool:
      v.push_back(B(true));
      v.push_back(B(false));
      break;
    case TypeId::kNull: break;
  }
  return v;
}

// A Value for v; a string is a new reference the caller releases.
Value ToValue(const TV& v) {
  if (!v.valid) return Value::Null();
  switch (v.type) {
    case TypeId::kInt64:
    case TypeId::kBool: return Value::Int(v.i);
    case TypeId::kFloat64: return Value::Double(v.d);
    case TypeId::kUtf8: return Value::String(v.s);
    case TypeId::kNull: break;
  }
  return Value::Null();
}

TV FromValue(TypeId t, const Value& v) {
  if (!v.valid || t == TypeId::kNull) return NullOf(t);
  switch (t) {
    case TypeId::kInt64: return I(v.i);
    case TypeId::kBool: return B(v.i != 0);
    case TypeId::kFloat64: return D(v.d);
    case TypeId::kUtf8: return S(std::string(v.s->view()));
    case TypeId::kNull: break;
  }
  return NullOf(t);
}

// Identical results: NULLs equal, NaN equals NaN, other doubles bit for bit, strings by bytes.
bool Same(const TV& a, const TV& b) {
  if (a.valid != b.valid) return false;
  if (!a.valid) return true;
  switch (a.type) {
    case TypeId::kFloat64: {
      if (std::isnan(a.d) && std::isnan(b.d)) return true;
      return std::memcmp(&a.d, &b.d, sizeof(double)) == 0;
    }
    case TypeId::kUtf8: return a.s == b.s;
    default: return a.i == b.i;
  }
}

Column ColumnOf(TypeId t, const std::vector<TV>& vals) {
  switch (t) {
    case TypeId::kInt64: {
      I64s v;
      for (const TV& x : vals) v.push_back(x.valid ? std::optional<int64_t>(x.i) : N);
      return I64(v);
    }
    case TypeId::kFloat64: {
      F64s v;
      for (const TV& x : vals) v.push_back(x.valid ? std::optional<double>(x.d) : N);
      return F64(v);
    }
    case TypeId::kUtf8: {
      Strs v;
      for (const TV& x : vals) v.push_back(x.valid ? std::optional<std::string>(x.s) : N);
      return Str(v);
    }
    case TypeId::kBool: {
      Bools v;
      for (const TV& x : vals) v.push_back(x.valid ? std::optional<bool>(x.i != 0) : N);
      return Bool(v);
    }
    case TypeId::kNull: break;
  }
  return Column::Nulls(TypeId::kNull, static_cast<int64_t>(vals.size()));
}

// ---- plan JSON -------------------------------------------------------------------------------

std::string TypeJson(TypeId t) { return "\"" + std::string(TypeName(t)) + "\""; }
std::string ColumnJson(int index, TypeId t) {
  return R"({"kind": "column", "index": )" + std::to_string(index) + R"(, "type": )" + TypeJson(t) + "}";
}
std::string JsonString(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}
std::string LiteralJson(const TV& v) {
  std::string value = "null";
  if (v.valid) {
    switch (v.type) {
      case TypeId::kInt64: value = std::to_string(v.i); break;
      case TypeId::kFloat64: {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", v.d);
        value = buf;
        if (value.find_first_of(".e") == std::string::npos) value += ".0";  // read back as a double
        break;
      }
      case TypeId::kBool: value = v.i ? "true" : "false"; break;
      case TypeId::kUtf8: value = JsonString(v.s); break;
      case TypeId::kNull: break;
    }
  }
  return R"({"kind": "literal", "type": )" + TypeJson(v.type) + R"(, "value": )" + value + "}";
}
std::string CallJson(const std::string& fn, TypeId result, const std::vector<std::string>& args) {
  std::string s = R"({"kind": "call", "fn": ")" + fn + R"(", "type": )" + TypeJson(result) + R"(, "args": [)";
  for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
  return s + "]}";
}

// ---- both ways -------------------------------------------------------------------------------

struct Mismatches {
  int count = 0;
  std::string first;
};

// Evaluates `expr` (over `schema`) on `rows` both ways — the compiled expression over a batch of
// them, and the row expression row by row — and records the rows where they differ. Afterwards
// the rows' own strings must be back to the one reference the test holds.
void BothWays(const std::string& expr, const Schema& schema, const std::vector<std::vector<TV>>& rows, Mismatches* m) {
  const size_t width = schema.size();
  const int64_t n = static_cast<int64_t>(rows.size());
  std::unique_ptr<Expression> e;
  try {
    e = Expression::Compile(json::Parse(expr), schema);
  } catch (const std::exception& x) {
    ++m->count;
    if (m->first.empty()) m->first = expr + ": does not compile: " + x.what();
    return;
  }
  Batch b;
  b.schema = std::make_shared<const Schema>(schema);
  b.length = n;
  for (size_t c = 0; c < width; ++c) {
    std::vector<TV> col;
    for (const auto& r : rows) col.push_back(r[c]);
    b.columns.push_back(ColumnOf(schema[c].type, col));
  }
  const Column batch_result = e->Evaluate(b);
  if (batch_result.length != n || batch_result.type != e->type()) {
    ++m->count;
    if (m->first.empty()) m->first = expr + ": the batch result has the wrong length or type";
    return;
  }
  std::unique_ptr<RowExpression> re;
  try {
    re = RowExpression::From(*e);
  } catch (const std::exception& x) {
    ++m->count;
    if (m->first.empty()) m->first = expr + ": has no row form: " + x.what();
    return;
  }
  if (re->type() != e->type()) {
    ++m->count;
    if (m->first.empty()) m->first = expr + ": the row expression has another type";
  }
  std::vector<Value> values(width);
  for (int64_t k = 0; k < n; ++k) {
    for (size_t c = 0; c < width; ++c) values[c] = ToValue(rows[k][c]);
    const Value rv = re->Evaluate(values.data());
    const TV row_result = FromValue(e->type(), rv);
    const bool is_true = e->type() == TypeId::kBool && re->IsTrue(values.data());  // (predicates only)
    if (e->type() == TypeId::kUtf8 && rv.valid) ReleaseString(rv.s);
    const Value bv = ColumnReader{&batch_result}.At(k);
    const TV col_result = FromValue(e->type(), bv);
    if (e->type() == TypeId::kUtf8 && bv.valid) ReleaseString(bv.s);
    bool ok = Same(row_result, col_result);
    if (e->type() == TypeId::kBool) ok &= is_true == (col_result.valid && col_result.i != 0);
    for (size_t c = 0; c < width; ++c)
      if (schema[c].type == TypeId::kUtf8 && values[c].valid) {
        ok &= values[c].s->refs == 1;  // borrowed, and given back
        ReleaseString(values[c].s);
      }
    if (!ok) {
      if (m->first.empty()) {
        std::string args;
        for (size_t c = 0; c < width; ++c) args += (c ? ", " : "") + ShowTV(rows[k][c]);
        m->first = expr + "\n      row (" + args + "): kernel " + ShowTV(col_result) + ", row expression " +
                   ShowTV(row_result) + (is_true ? " (IsTrue)" : "") + " or its strings' references";
      }
      ++m->count;
    }
  }
}

// Every combination of the edge values of `types` (or, past `cap`, a deterministic sample).
std::vector<std::vector<TV>> Combinations(const std::vector<TypeId>& types, size_t cap, uint64_t seed) {
  std::vector<std::vector<TV>> edges;
  size_t total = 1;
  for (TypeId t : types) {
    edges.push_back(Edges(t, false));
    total *= edges.back().size();
  }
  std::vector<std::vector<TV>> rows;
  if (total <= cap) {
    for (size_t k = 0; k < total; ++k) {
      std::vector<TV> r;
      size_t x = k;
      for (const auto& e : edges) {
        r.push_back(e[x % e.size()]);
        x /= e.size();
      }
      rows.push_back(std::move(r));
    }
    return rows;
  }
  Rng rng(seed);
  for (size_t k = 0; k < cap; ++k) {
    std::vector<TV> r;
    for (const auto& e : edges) r.push_back(e[static_cast<size_t>(rng.Below(static_cast<int64_t>(e.size())))]);
    rows.push_back(std::move(r));
  }
  return rows;
}

// The argument types each kernel is called with: its own, and for case_when one and two WHENs.
std::vector<std::vector<TypeId>> Arities(const Kernel& k) {
  if (k.repeat == 0) return {k.args};
  std::vector<std::vector<TypeId>> out;
  for (int whens = 1; whens <= 2; ++whens) {
    std::vector<TypeId> a;
    for (int w = 0; w < whens; ++w) a.insert(a.end(), k.args.begin(), k.args.begin() + k.repeat);
    a.insert(a.end(), k.args.begin() + k.repeat, k.args.end());
    out.push_back(a);
  }
  return out;
}

std::string Signature(const std::string& fn, const std::vector<TypeId>& types) {
  std::string s = fn + "(";
  for (size_t i = 0; i < types.size(); ++i) s += (i ? ", " : "") + std::string(TypeName(types[i]));
  return s + ")";
}

// ---- RowExpression vs the kernels ----------------------------------------------------------------

CQ_TEST(row_expressions_agree_with_every_kernel_on_edge_cases) {
  int signatures = 0;
  for (const Kernel& k : KernelRegistry::Global().kernels()) {
    for (const std::vector<TypeId>& types : Arities(k)) {
      ++signatures;
      Schema schema;
      std::vector<std::string> cols;
      for (size_t i = 0; i < types.size(); ++i) {
        schema.push_back({"c" + std::to_string(i), types[i]});
        cols.push_back(ColumnJson(static_cast<int>(i), types[i]));
      }
      Mismatches m;
      BothWays(CallJson(k.name, k.result, cols), schema, Combinations(types, 20000, signatures), &m);
      if (m.count)
        Fail(__FILE__, __LINE__,
             Signature(k.name, types) + ": " + std::to_string(m.count) + " rows differ; the first: " + m.first);
    }
  }
  // Every family is there: the test must not pass by finding nothing to check.
  CQ_EXPECT(signatures >= 68);
  for (const char* fn :
       {"add",         "subtract",   "multiply",     "divide",        "modulo",    "negate",   "equal", "not_equal",
        "less",        "less_equal", "greater",      "greater_equal", "and",       "or",       "not",   "is_null",
        "is_not_null", "cast_int64", "cast_float64", "cast_utf8",     "cast_bool", "case_when"}) {
    bool found = false;
    for (const Kernel& k : KernelRegistry::Global().kernels()) found |= k.name == fn;
    CQ_EXPECT(found);
  }
}

CQ_TEST(every_kernel_has_a_row_form) {
  // The row form is part of a kernel's registration (kernels/row_form.h): a kernel added without
  // one, or whose binder gives up on its own signature, is caught here by name.
  int kernels = 0;
  for (const Kernel& k : KernelRegistry::Global().kernels()) {
    ++kernels;
    if (!k.row) {
      Fail(__FILE__, __LINE__, Signature(k.name, k.args) + " has no row form");
      continue;
    }
    for (const std::vector<TypeId>& types : Arities(k)) {
      Schema schema;
      std::vector<std::string> cols;
      for (size_t i = 0; i < types.size(); ++i) {
        schema.push_back({"c" + std::to_string(i), types[i]});
        cols.push_back(ColumnJson(static_cast<int>(i), types[i]));
      }
      auto e = Expression::Compile(json::Parse(CallJson(k.name, k.result, cols)), schema);
      CQ_EXPECT(e->kernel() == &k);
      CQ_EXPECT(RowExpression::From(*e)->type() == k.result);
    }
  }
  CQ_EXPECT(kernels >= 60);
}

// A random value of type t: NULL one time in five, an edge value one in five, else drawn from
// ranges that reach each function's corners (wrapping products, zero divisors, strings that
// parse as numbers and booleans, or almost do).
TV RandomValue(TypeId t, Rng& rng) {
  const int64_t pick = rng.Below(5);
  if (pick == 0 || t == TypeId::kNull) return NullOf(t);
  if (pick == 1) {
    const std::vector<TV> edges = Edges(t, false);
    return edges[static_cast<size_t>(rng.Below(static_cast<int64_t>(edges.size())))];
  }
  switch (t) {
    case TypeId::kInt64: {
      const uint64_t bits = rng.Next();
      switch (rng.Below(3)) {
        case 0: return I(rng.Below(21) - 10);
        case 1: return I(static_cast<int64_t>(bits >> rng.Below(64)) * (rng.Below(2) ? 1 : -1));
        default: return I(static_cast<int64_t>(bits));
      }
    }
    case TypeId::kFloat64: {
      switch (rng.Below(4)) {
        case 0: return D(static_cast<double>(rng.Below(41) - 20) / 4);
        case 1:
          return D(std::ldexp(static_cast<double>(rng.Next() >> 11), static_cast<int>(rng.Below(200)) - 100) *
                   (rng.Below(2) ? 1 : -1));
        case 2: {
          double d;
          const uint64_t bits = rng.Next();  // any bit pattern: subnormals, NaNs with payloads, ±Inf
          std::memcpy(&d, &bits, sizeof d);
          return D(d);
        }
        default: return D(std::ldexp(1.0, static_cast<int>(rng.Below(130)) - 2) * (rng.Below(2) ? 1 : -1));
      }
    }
    case TypeId::kUtf8: {
      static const char* kPieces[] = {"0", "1", "9", "-", "+", ".", "e", "E",  "x",   "p",     " ", "\t",   "t",
                                      "r", "u", "y", "n", "f", "a", "I", "nf", "NaN", "inity", "d", "\x7f", "\xc3\xa9"};
      std::string v;
      for (int64_t k = rng.Below(6); k > 0; --k) v += kPieces[rng.Below(static_cast<int64_t>(std::size(kPieces)))];
      return S(v);
    }
    case TypeId::kBool: return B(rng.Below(2) == 1);
    case TypeId::kNull: break;
  }
  return NullOf(t);
}

CQ_TEST(row_forms_agree_with_every_kernel_on_random_rows) {
  // Every registered kernel, its arguments columns or (each in turn) a random literal, on random
  // rows: the row form (RowExpression) gives what the vector form (Expression over a batch) gives.
  int signatures = 0;
  for (const Kernel& k : KernelRegistry::Global().kernels()) {
    for (const std::vector<TypeId>& types : Arities(k)) {
      Rng rng(static_cast<uint64_t>(++signatures) * 7919);
      Mismatches m;
      for (int round = 0; round < 8; ++round) {
        // Round 0 has every argument a column; the others make one argument a literal.
        const size_t lit =
            round == 0 ? types.size() : static_cast<size_t>(rng.Below(static_cast<int64_t>(types.size())));
        Schema schema;
        std::vector<std::string> args;
        for (size_t i = 0; i < types.size(); ++i) {
          if (i == lit) {
            TV v = RandomValue(types[i], rng);
            if (types[i] == TypeId::kFloat64 && v.valid && !std::isfinite(v.d)) v = D(0.5);  // (JSON has no NaN)
            args.push_back(LiteralJson(v));
            continue;
          }
          args.push_back(ColumnJson(static_cast<int>(schema.size()), types[i]));
          schema.push_back({"c" + std::to_string(i), types[i]});
        }
        std::vector<std::vector<TV>> rows(schema.empty() ? 3 : 700);
        for (auto& r : rows)
          for (const Field& f : schema) r.push_back(RandomValue(f.type, rng));
        BothWays(CallJson(k.name, k.result, args), schema, rows, &m);
      }
      if (m.count)
        Fail(__FILE__, __LINE__,
             Signature(k.name, types) + " on random rows: " + std::to_string(m.count) +
                 " rows differ; the first: " + m.first);
    }
  }
  CQ_EXPECT(signatures >= 68);
}

CQ_TEST(row_expressions_agree_with_every_kernel_with_a_literal_argument) {
  // Each argument in turn a literal (every edge value JSON can spell, NULL too), next to columns.
  for (const Kernel& k : KernelRegistry::Global().kernels()) {
    for (const std::vector<TypeId>& types : Arities(k)) {
      Mismatches m;
      for (size_t lit = 0; lit < types.size(); ++lit) {
        Schema schema;
        std::vector<TypeId> col_types;
        std::vector<int> index(types.size(), -1);
        for (size_t i = 0; i < types.size(); ++i) {
          if (i == lit) continue;
          index[i] = static_cast<int>(schema.size());
          schema.push_back({"c" + std::to_string(i), types[i]});
          col_types.push_back(types[i]);
        }
        const auto rows = Combinations(col_types, 1500, lit + 7);
        for (const TV& v : Edges(types[lit], true)) {
          std::vector<std::string> args;
          for (size_t i = 0; i < types.size(); ++i)
            args.push_back(i == lit ? LiteralJson(v) : ColumnJson(index[i], types[i]));
          // (a call over a literal only is folded when compiled: still one value per row)
          BothWays(CallJson(k.name, k.result, args), schema, col_types.empty() ? std::vector<std::vector<TV>>(3) : rows,
                   &m);
        }
      }
      if (m.count)
        Fail(__FILE__, __LINE__,
             Signature(k.name, types) + " with a literal: " + std::to_string(m.count) +
                 " rows differ; the first: " + m.first);
    }
  }
}

CQ_TEST(row_expressions_on_numbers_agree_however_their_arguments_are_read) {
  // A function on two numbers is bound to how each argument is read (a column, a literal or a call);
  // every pairing of the nine, for every such function, against its kernel. The call is a negation
  // of the other column, so a call's NULLs and edge values reach the function too.
  int pairings = 0;
  for (const Kernel& k : KernelRegistry::Global().kernels()) {
    for (const std::vector<TypeId>& types : Arities(k)) {
      if (types.size() != 2 || types[0] != types[1] || (types[0] != TypeId::kInt64 && types[0] != TypeId::kFloat64))
        continue;
      const TypeId t = types[0];
      const Schema schema = {{"x", t}, {"y", t}};
      const auto rows = Combinations({t, t}, 3000, 41);
      Mismatches m;
      for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) {
          for (const TV& v : {t == TypeId::kInt64 ? I(3) : D(2.5), NullOf(t), t == TypeId::kInt64 ? I(-1) : D(0)}) {
            const auto arg = [&](int how, int col) {
              return how == 0   ? ColumnJson(col, t)
                     : how == 1 ? LiteralJson(v)
                                : CallJson("negate", t, {ColumnJson(1 - col, t)});
            };
            BothWays(CallJson(k.name, k.result, {arg(a, 0), arg(b, 1)}), schema, rows, &m);
          }
          ++pairings;
        }
      }
      if (m.count)
        Fail(__FILE__, __LINE__,
             Signature(k.name, types) + ": " + std::to_string(m.count) + " rows differ; the first: " + m.first);
    }
  }
  // + - * / % and the six comparisons over BIGINT and DOUBLE, nine pairings each
  CQ_EXPECT(pairings >= 9 * 18);
}

CQ_TEST(nested_row_expressions_agree_and_give_back_their_strings) {
  // Calls inside calls: strings made by one call (a cast to VARCHAR runs its kernel) and handed to
  // another are released; borrowed ones (columns, literals) are not.
  const Schema schema = {{"i", TypeId::kInt64}, {"x", TypeId::kFloat64}, {"s", TypeId::kUtf8}, {"f", TypeId::kBool}};
  const std::string i = ColumnJson(0, TypeId::kInt64), x = ColumnJson(1, TypeId::kFloat64),
                    s = ColumnJson(2, TypeId::kUtf8), f = ColumnJson(3, TypeId::kBool);
  const TypeId U = TypeId::kUtf8, Bo = TypeId::kBool, F = TypeId::kFloat64, In = TypeId::kInt64;
  const std::vector<std::string> exprs = {
      CallJson("equal", Bo, {CallJson("cast_utf8", U, {x}), s}),
      CallJson("less", Bo, {s, CallJson("cast_utf8", U, {i})}),
      CallJson("case_when", U, {f, CallJson("cast_utf8", U, {i}), s}),
      CallJson("case_when", U, {f, s, LiteralJson(S("else"))}),
      CallJson("case_when", U,
               {CallJson("is_null", Bo, {s}), LiteralJson(S("none")), f, CallJson("cast_utf8", U, {x}),
                CallJson("cast_utf8", U, {f})}),
      CallJson("is_null", Bo, {CallJson("cast_utf8", U, {i})}),
      CallJson("is_not_null", Bo, {CallJson("case_when", U, {f, s, LiteralJson(NullOf(U))})}),
      CallJson("cast_float64", F, {CallJson("cast_utf8", U, {x})}),
      CallJson("cast_int64", In, {CallJson("case_when", U, {f, s, CallJson("cast_utf8", U, {i})})}),
      CallJson("and", Bo, {CallJson("less", Bo, {s, LiteralJson(S("b"))}), CallJson("not", Bo, {f})}),
      CallJson("or", Bo,
               {CallJson("greater", Bo, {CallJson("cast_float64", F, {i}), x}),
                CallJson("equal", Bo, {CallJson("cast_bool", Bo, {s}), f})}),
      CallJson("add", In, {CallJson("multiply", In, {i, LiteralJson(I(3))}), CallJson("cast_int64", In, {x})}),
      CallJson("divide", F,
               {CallJson("negate", F, {x}), CallJson("cast_float64", F, {CallJson("modulo", In, {i, i})})}),
  };
  const auto rows = Combinations({TypeId::kInt64, TypeId::kFloat64, TypeId::kUtf8, TypeId::kBool}, 4000, 99);
  for (const std::string& e : exprs) {
    Mismatches m;
    BothWays(e, schema, rows, &m);
    if (m.count) Fail(__FILE__, __LINE__, std::to_string(m.count) + " rows differ; the first: " + m.first);
  }
}

CQ_TEST(row_expression_literal_strings_are_shared_not_copied) {
  // A string literal is one reference the expression owns; each evaluation hands out another.
  const Schema schema = {{"f", TypeId::kBool}};
  auto e = Expression::Compile(
      json::Parse(CallJson("case_when", TypeId::kUtf8,
                           {ColumnJson(0, TypeId::kBool), LiteralJson(S("yes")), LiteralJson(S("no"))})),
      schema);
  auto re = RowExpression::From(*e);
  Value row[1] = {Value::Bool(true)};
  const Value a = re->Evaluate(row);
  row[0] = Value::Bool(false);
  const Value b = re->Evaluate(row);
  const Value c = re->Evaluate(row);
  CQ_ASSERT(a.valid && b.valid && c.valid);
  CQ_EXPECT_EQ(std::string(a.s->view()), "yes");
  CQ_EXPECT_EQ(std::string(b.s->view()), "no");
  CQ_EXPECT(b.s == c.s);        // the same block
  CQ_EXPECT_EQ(b.s->refs, 3u);  // the expression's and two results'
  ReleaseString(a.s);
  ReleaseString(b.s);
  CQ_EXPECT_EQ(c.s->refs, 2u);
  ReleaseString(c.s);  // (the expression's reference is let go of with it)
}

// ---- RowStore --------------------------------------------------------------------------------

const Schema kStoreSchema = {{"k", TypeId::kInt64}, {"s", TypeId::kUtf8}, {"x", TypeId::kFloat64}};

struct StoreRow {
  int64_t k;
  const StrBlock* s;  // null: NULL
  double x;
};

std::vector<Value> Vals(const StoreRow& r) {
  Value s = Value::Null();
  if (r.s) {
    s.s = r.s;
    s.valid = true;
  }
  return {Value::Int(r.k), s, Value::Double(r.x)};
}

CQ_TEST(row_layout_equal_sees_values_as_set_operations_do_whatever_their_bits) {
  // Rows of numbers equal bit for bit are equal at once; the others are compared by type: NULLs
  // are equal whatever bits they carry, -0.0 equals 0.0, NaN equals NaN, NULL never equals 0.
  const RowLayout l(Schema{{"i", TypeId::kInt64}, {"d", TypeId::kFloat64}, {"b", TypeId::kBool}});
  auto row = [](Value i, Value d, Value b) { return std::vector<Value>{i, d, b}; };
  auto null_with_bits = [](int64_t bits) {
    Value v = Value::Null();
    v.i = bits;
    return v;
  };
  const double nan1 = std::nan("1"), nan2 = std::nan("2");
  const auto a = row(Value::Int(7), Value::Double(1.5), Value::Bool(true));
  CQ_EXPECT(l.Equal(a.data(), row(Value::Int(7), Value::Double(1.5), Value::Bool(true)).data()));
  CQ_EXPECT(!l.Equal(a.data(), row(Value::Int(8), Value::Double(1.5), Value::Bool(true)).data()));
  CQ_EXPECT(!l.Equal(a.data(), row(Value::Int(7), Value::Double(2.5), Value::Bool(true)).data()));
  CQ_EXPECT(!l.Equal(a.data(), row(Value::Int(7), Value::Double(1.5), Value::Bool(false)).data()));
  CQ_EXPECT(l.Equal(row(null_with_bits(0), Value::Double(-0.0), Value::Bool(false)).data(),
                    row(null_with_bits(99), Value::Double(0.0), Value::Bool(false)).data()));
  CQ_EXPECT(l.Equal(row(Value::Int(1), Value::Double(nan1), null_with_bits(1)).data(),
                    row(Value::Int(1), Value::Double(nan2), null_with_bits(0)).data()));
  CQ_EXPECT(!l.Equal(row(null_with_bits(0), Value::Double(0.0), Value::Bool(false)).data(),
                     row(Value::Int(0), Value::Double(0.0), Value::Bool(false)).data()));
  CQ_EXPECT(!l.Equal(row(Value::Int(0), Value::Double(nan1), Value::Bool(false)).data(),
                     row(Value::Int(0), Value::Double(0.0), Value::Bool(false)).data()));
}

CQ_TEST(row_store_adds_removes_and_reuses_slots) {
  RowStore st{RowLayout(kStoreSchema)};
  CQ_EXPECT_EQ(st.size(), 0u);
  CQ_EXPECT(!st.live(0));
  std::vector<uint32_t> slots;
  for (int64_t k = 0; k < 5; ++k) slots.push_back(st.Add(Vals({k, nullptr, k * 0.5}).data()));
  CQ_EXPECT_EQ(slots, (std::vector<uint32_t>{0, 1, 2, 3, 4}));
  CQ_EXPECT_EQ(st.size(), 5u);
  st.Remove(1);
  st.Remove(3);
  CQ_EXPECT_EQ(st.size(), 3u);
  CQ_EXPECT(!st.live(1) && !st.live(3) && st.live(0) && st.live(2) && st.live(4));
  std::vector<uint32_t> seen;
  st.ForEach([&](uint32_t s) { seen.push_back(s); });
  CQ_EXPECT_EQ(seen, (std::vector<uint32_t>{0, 2, 4}));
  // Freed slots are reused (the last freed first) before the store grows.
  CQ_EXPECT_EQ(st.Add(Vals({30, nullptr, 3.0}).data()), 3u);
  CQ_EXPECT_EQ(st.Add(Vals({10, nullptr, 1.0}).data()), 1u);
  CQ_EXPECT_EQ(st.Add(Vals({50, nullptr, 5.0}).data()), 5u);
  CQ_EXPECT_EQ(st.Get(3)[0].i, 30);
  CQ_EXPECT_EQ(st.Get(1)[0].i, 10);
  CQ_EXPECT_EQ(st.Get(1)[2].d, 1.0);
  CQ_EXPECT(!st.Get(1)[1].valid);
  CQ_EXPECT_EQ(st.Get(2)[0].i, 2);
  CQ_EXPECT_EQ(st.size(), 6u);

  // The same without strings (the store's fast path).
  RowStore ints{RowLayout(Schema{{"k", TypeId::kInt64}})};
  for (int64_t k = 0; k < 3; ++k) ints.Add(Vals({k, nullptr, 0}).data());
  ints.Remove(0);
  const Value v[1] = {Value::Int(42)};
  CQ_EXPECT_EQ(ints.Add(v), 0u);
  CQ_EXPECT_EQ(ints.Get(0)[0].i, 42);
  CQ_EXPECT_EQ(ints.size(), 3u);
}

CQ_TEST(row_store_retains_and_releases_strings) {
  const StrBlock* a = NewString("alpha");
  const StrBlock* b = NewString("");
  {
    RowStore st{RowLayout(kStoreSchema)};
    const uint32_t s0 = st.Add(Vals({1, a, 0}).data());
    CQ_EXPECT_EQ(a->refs, 2u);
    const uint32_t s1 = st.Add(Vals({2, a, 0}).data());
    const uint32_t s2 = st.Add(Vals({3, b, 0}).data());
    st.Add(Vals({4, nullptr, 0}).data());  // a NULL string holds nothing
    CQ_EXPECT_EQ(a->refs, 3u);
    CQ_EXPECT_EQ(b->refs, 2u);
    CQ_EXPECT(st.Get(s0)[1].s == a);  // shared, not copied
    st.Remove(s1);
    CQ_EXPECT_EQ(a->refs, 2u);
    st.Remove(s2);
    CQ_EXPECT_EQ(b->refs, 1u);
    st.Add(Vals({5, b, 0}).data());  // into a freed slot
    CQ_EXPECT_EQ(b->refs, 2u);
    st.Clear();
    CQ_EXPECT_EQ(a->refs, 1u);
    CQ_EXPECT_EQ(b->refs, 1u);
    CQ_EXPECT_EQ(st.size(), 0u);
    st.Add(Vals({6, a, 0}).data());
    st.Add(Vals({7, a, 0}).data());
    CQ_EXPECT_EQ(a->refs, 3u);
  }  // the destructor lets go of what is left
  CQ_EXPECT_EQ(a->refs, 1u);
  ReleaseString(a);
  ReleaseString(b);
}

CQ_TEST(row_store_values_stay_put_while_it_grows) {
  RowStore st{RowLayout(kStoreSchema)};
  const StrBlock* s = NewString("kept");
  const uint32_t first = st.Add(Vals({-1, s, -0.5}).data());
  const Value* where = st.Get(first);
  std::vector<uint32_t> slots;
  for (int64_t k = 0; k < 2000; ++k) slots.push_back(st.Add(Vals({k, (k % 3) ? s : nullptr, k * 0.25}).data()));
  CQ_EXPECT(st.Get(first) == where);  // chunks never move
  CQ_EXPECT_EQ(where[0].i, -1);
  CQ_EXPECT(where[1].valid && where[1].s == s);
  CQ_EXPECT_EQ(where[2].d, -0.5);
  bool ok = true;
  for (int64_t k = 0; k < 2000; ++k) {
    const Value* v = st.Get(slots[static_cast<size_t>(k)]);
    ok &= v[0].i == k && v[2].d == k * 0.25 && v[1].valid == ((k % 3) != 0);
  }
  CQ_EXPECT(ok);
  CQ_EXPECT_EQ(st.size(), 2001u);
  CQ_EXPECT_EQ(s->refs, 1u + 1u + 1333u);
  st.Clear();
  CQ_EXPECT_EQ(s->refs, 1u);
  ReleaseString(s);
}

template <typename W, typename R>
void RoundTrip(W write, R read) {
  SnapshotWriter w;
  write(w);
  SnapshotReader r(w.bytes().data(), w.bytes().size());
  read(r);
}

CQ_TEST(row_store_snapshot_round_trip_keeps_slots_and_free_list) {
  auto schema = std::make_shared<const Schema>(kStoreSchema);
  RowStore st{RowLayout(kStoreSchema)};
  const StrBlock* s = NewString("shared");
  for (int64_t k = 0; k < 300; ++k) st.Add(Vals({k, (k % 2) ? s : nullptr, -k * 1.5}).data());
  for (uint32_t k : {7u, 299u, 0u, 256u, 100u}) st.Remove(k);
  RowStore back{RowLayout(kStoreSchema)};
  back.Add(Vals({1000, s, 0}).data());  // whatever a restored store held before goes
  RoundTrip([&](SnapshotWriter& w) { st.Snapshot(w, schema); },
            [&](SnapshotReader& r) { back.Restore(r, kStoreSchema); });
  CQ_EXPECT_EQ(back.size(), st.size());
  bool same = true;
  for (uint32_t k = 0; k < 300; ++k) {
    same &= back.live(k) == st.live(k);
    if (!st.live(k) || !back.live(k)) continue;
    const Value *a = st.Get(k), *b = back.Get(k);
    same &= a[0].i == b[0].i && a[2].d == b[2].d && a[1].valid == b[1].valid;
    if (a[1].valid && b[1].valid) same &= a[1].s->view() == b[1].s->view() && b[1].s->refs == 1;  // its own copy
  }
  CQ_EXPECT(same);
  CQ_EXPECT_EQ(s->refs, 1u + 148u);  // st's rows only: the restored store let go of its old row
  // Both hand out the same slots next (the free list survived), then grow alike.
  for (int64_t k = 0; k < 7; ++k) {
    const uint32_t a = st.Add(Vals({500 + k, s, 0}).data());
    const uint32_t b = back.Add(Vals({500 + k, s, 0}).data());
    CQ_EXPECT_EQ(a, b);
    CQ_EXPECT_EQ(back.Get(b)[0].i, 500 + k);
    CQ_EXPECT(back.Get(b)[1].s == s);
  }
  CQ_EXPECT_EQ(back.size(), st.size());

  // Without strings (the Add fast path reuses a restored free slot in a restored chunk).
  const Schema ints = {{"k", TypeId::kInt64}};
  RowStore a{RowLayout(ints)}, b{RowLayout(ints)};
  for (int64_t k = 0; k < 260; ++k) a.Add(Vals({k, nullptr, 0}).data());
  a.Remove(258);
  a.Remove(3);
  RoundTrip([&](SnapshotWriter& w) { a.Snapshot(w, std::make_shared<const Schema>(ints)); },
            [&](SnapshotReader& r) { b.Restore(r, ints); });
  const Value v[1] = {Value::Int(-9)};
  CQ_EXPECT_EQ(b.Add(v), 3u);
  CQ_EXPECT_EQ(b.Add(v), 258u);
  CQ_EXPECT_EQ(b.Add(v), 260u);
  CQ_EXPECT_EQ(b.Get(258)[0].i, -9);
  CQ_EXPECT_EQ(b.Get(259)[0].i, 259);
  CQ_EXPECT_EQ(b.size(), 261u);
  st.Clear();
  back.Clear();
  CQ_EXPECT_EQ(s->refs, 1u);
  ReleaseString(s);
}

CQ_TEST(row_store_restore_refuses_inconsistent_slots) {
  // A store's snapshot: the live flags, the free list, the live rows as one batch.
  const Schema ints = {{"k", TypeId::kInt64}};
  auto forged = [&](const std::vector<uint8_t>& live, const std::vector<uint32_t>& free, const I64s& rows) {
    SnapshotWriter w;
    w.PodVec(live);
    w.PodVec(free);
    w.I64(static_cast<int64_t>(rows.size()));
    if (!rows.empty()) {
      Batch b;
      b.schema = std::make_shared<const Schema>(ints);
      b.length = static_cast<int64_t>(rows.size());
      b.columns.push_back(I64(rows));
      b.sync = MakeTimeColumn(std::vector<Time>(rows.size(), Time{0, 0}));
      w.WriteBatch(b);
    }
    return w.bytes();
  };
  auto restores = [&](const std::string& bytes) {
    RowStore st{RowLayout(ints)};
    SnapshotReader r(bytes.data(), bytes.size());
    try {
      st.Restore(r, ints);
    } catch (const CqError&) {
      return false;
    }
    return true;
  };
  CQ_EXPECT(restores(forged({1, 0, 0, 1}, {2, 1}, {5, 6})));
  CQ_EXPECT(!restores(forged({1, 0, 0, 1}, {1, 1}, {5, 6})));  // a free slot twice (then handed out twice)
  CQ_EXPECT(!restores(forged({1, 0, 0, 1}, {0, 1}, {5, 6})));  // a live slot free
  CQ_EXPECT(!restores(forged({1, 0, 0, 1}, {2, 1}, {5})));     // fewer rows than live slots
  CQ_EXPECT(!restores(forged({1, 0, 2, 1}, {1}, {5, 6})));     // a flag that is neither
  CQ_EXPECT(!restores(forged({1, 0, 0, 1}, {2, 9}, {5, 6})));  // a slot that is not there
}

// ---- RowBatchBuilder -----------------------------------------------------------------------------

Row RowOf(const Value* values, Time sync, Time other, HolderId holder) {
  Row r;
  r.values = values;
  r.sync = sync;
  r.other = other;
  r.holder = holder;
  return r;
}

const Schema kBuilderSchema = {
    {"i", TypeId::kInt64}, {"s", TypeId::kUtf8}, {"x", TypeId::kFloat64}, {"f", TypeId::kBool}};

// Appends a row of the builder schema; strings live through the call only.
void AppendRow(RowBatchBuilder& bb, std::optional<int64_t> i, std::optional<std::string> s, std::optional<double> x,
               std::optional<bool> f, Time sync, Time other = Time::Infinity(), HolderId holder = kNoHolder) {
  Value v[4] = {i ? Value::Int(*i) : Value::Null(), s ? Value::String(*s) : Value::Null(),
                x ? Value::Double(*x) : Value::Null(), f ? Value::Bool(*f) : Value::Null()};
  bb.Append(RowOf(v, sync, other, holder));
  if (s) ReleaseString(v[1].s);
}

std::vector<Time> SyncOf(const Batch& b) {
  std::vector<Time> t;
  for (int64_t k = 0; k < b.length; ++k) t.push_back(b.StartAt(k));
  return t;
}
std::vector<Time> EndsOf(const Batch& b) {
  std::vector<Time> t;
  for (int64_t k = 0; k < b.length; ++k) t.push_back(b.EndAt(k));
  return t;
}
std::vector<HolderId> HoldersOf(const Batch& b) {
  std::vector<HolderId> h;
  for (int64_t k = 0; k < b.length; ++k) h.push_back(b.EndPending(k) ? b.holders.as<const HolderId>()[k] : kNoHolder);
  return h;
}

CQ_TEST(row_batch_builder_gathers_rows_into_columns) {
  auto schema = std::make_shared<const Schema>(kBuilderSchema);
  RowBatchBuilder bb(schema, BatchKind::kStream, std::nullopt);
  CQ_EXPECT(bb.empty());
  AppendRow(bb, 1, "a", 0.5, true, {3, 0});
  AppendRow(bb, N, N, N, N, {3, 1});
  AppendRow(bb, kMin, "", -0.0, false, {4, 0});
  CQ_EXPECT_EQ(bb.size(), 3);
  const Batch b = bb.Finish();
  CQ_EXPECT(bb.empty());
  CQ_EXPECT(b.kind == BatchKind::kStream);
  CQ_EXPECT(b.schema == schema);
  CQ_ASSERT(b.length == 3 && b.columns.size() == 4);
  CQ_EXPECT_EQ(ReadI64(b.columns[0]), (I64s{1, N, kMin}));
  CQ_EXPECT_EQ(ReadStr(b.columns[1]), (Strs{"a", N, ""}));
  const F64s x = ReadF64(b.columns[2]);
  CQ_EXPECT_EQ(x, (F64s{0.5, N, -0.0}));
  CQ_EXPECT(x[2] && std::signbit(*x[2]));
  CQ_EXPECT_EQ(ReadBool(b.columns[3]), (Bools{true, N, false}));
  CQ_EXPECT_EQ(CountNulls(b.columns[0]), b.columns[0].null_count);
  CQ_EXPECT_EQ(SyncOf(b), (std::vector<Time>{{3, 0}, {3, 1}, {4, 0}}));
  CQ_EXPECT(b.other.empty() && b.holders.empty() && !b.constant_duration);
  // Nothing in, an empty batch out.
  CQ_EXPECT_EQ(bb.Finish().length, 0);
}

CQ_TEST(row_batch_builder_writes_ends_holders_and_fixed_ends) {
  auto schema = std::make_shared<const Schema>(kBuilderSchema);
  RowBatchBuilder bb(schema, BatchKind::kLifetime, std::nullopt);
  AppendRow(bb, 1, "a", 1.0, true, {1, 0}, {5, 0});
  AppendRow(bb, 2, "b", 2.0, true, {2, 0}, Time::Infinity(), 7);  // end pending under holder 7
  AppendRow(bb, 3, "c", 3.0, false, {2, 0}, Time::Infinity(), 9);
  AppendRow(bb, 4, N, 4.0, false, {3, 2}, Time::Infinity());  // never ends
  // The end of a row held here is written into it; an unknown id is not this builder's.
  CQ_EXPECT(bb.FixEnd(7, {6, 1}));
  CQ_EXPECT(!bb.FixEnd(7, {8, 0}));  // once only
  CQ_EXPECT(!bb.FixEnd(8, {8, 0}));
  CQ_EXPECT(!bb.FixEnd(100000, {8, 0}));
  const Batch b = bb.Finish();
  CQ_EXPECT(b.kind == BatchKind::kLifetime);
  CQ_ASSERT(b.length == 4);
  CQ_EXPECT(!b.constant_duration);
  CQ_EXPECT_EQ(SyncOf(b), (std::vector<Time>{{1, 0}, {2, 0}, {2, 0}, {3, 2}}));
  CQ_EXPECT_EQ(HoldersOf(b), (std::vector<HolderId>{kNoHolder, kNoHolder, 9, kNoHolder}));
  const std::vector<Time> ends = EndsOf(b);
  CQ_EXPECT_EQ(ends[0], (Time{5, 0}));
  CQ_EXPECT_EQ(ends[1], (Time{6, 1}));
  CQ_EXPECT(ends[3].IsInfinite());
  CQ_EXPECT_EQ(ReadI64(b.columns[0]), (I64s{1, 2, 3, 4}));
  // After Finish the ids are no longer this builder's (its rows were handed over).
  CQ_EXPECT(!bb.FixEnd(9, {9, 0}));

  // A batch whose pending rows were all fixed carries no holders.
  AppendRow(bb, 5, "e", 5.0, true, {10, 0}, Time::Infinity(), 9);
  CQ_EXPECT(bb.FixEnd(9, {12, 0}));
  const Batch c = bb.Finish();
  CQ_ASSERT(c.length == 1);
  CQ_EXPECT(c.holders.empty());
  CQ_EXPECT_EQ(EndsOf(c), (std::vector<Time>{{12, 0}}));
}

CQ_TEST(row_batch_builder_constant_duration_only_when_given_and_every_row_agrees) {
  auto schema = std::make_shared<const Schema>(kBuilderSchema);
  const Duration d = Duration::Ticks(5);
  {  // given, and every row agrees
    RowBatchBuilder bb(schema, BatchKind::kLifetime, d);
    AppendRow(bb, 1, "a", 1.0, true, {1, 0}, {6, 0});
    AppendRow(bb, 2, "b", 2.0, true, {2, 3}, {7, 3});
    const Batch b = bb.Finish();
    CQ_ASSERT(b.constant_duration.has_value());
    CQ_EXPECT(*b.constant_duration == d);
    CQ_EXPECT(b.other.empty());
    CQ_EXPECT_EQ(EndsOf(b), (std::vector<Time>{{6, 0}, {7, 3}}));
    // The next batch starts over: one row that disagrees is enough.
    AppendRow(bb, 1, "a", 1.0, true, {8, 0}, {13, 0});
    AppendRow(bb, 2, "b", 2.0, true, {9, 0}, {15, 0});
    const Batch c = bb.Finish();
    CQ_EXPECT(!c.constant_duration);
    CQ_EXPECT_EQ(EndsOf(c), (std::vector<Time>{{13, 0}, {15, 0}}));
    // ... and the one after agrees again.
    AppendRow(bb, 3, "c", 3.0, true, {20, 0}, {25, 0});
    const Batch e = bb.Finish();
    CQ_EXPECT(e.constant_duration.has_value());
    CQ_EXPECT_EQ(EndsOf(e), (std::vector<Time>{{25, 0}}));
  }
  {  // agreeing rows but no duration given: ends written out
    RowBatchBuilder bb(schema, BatchKind::kLifetime, std::nullopt);
    AppendRow(bb, 1, "a", 1.0, true, {1, 0}, {6, 0});
    const Batch b = bb.Finish();
    CQ_EXPECT(!b.constant_duration);
    CQ_EXPECT_EQ(EndsOf(b), (std::vector<Time>{{6, 0}}));
  }
  {  // a pending row: its end is not the batch's to promise
    RowBatchBuilder bb(schema, BatchKind::kLifetime, d);
    AppendRow(bb, 1, "a", 1.0, true, {1, 0}, {6, 0});
    AppendRow(bb, 2, "b", 2.0, true, {2, 0}, Time::Infinity(), 3);
    const Batch b = bb.Finish();
    CQ_EXPECT(!b.constant_duration);
    CQ_EXPECT_EQ(HoldersOf(b), (std::vector<HolderId>{kNoHolder, 3}));
    // A pending row fixed to the duration: the ends read right however the batch says them.
    AppendRow(bb, 2, "b", 2.0, true, {2, 0}, Time::Infinity(), 3);
    CQ_EXPECT(bb.FixEnd(3, {7, 0}));
    const Batch c = bb.Finish();
    CQ_EXPECT_EQ(EndsOf(c), (std::vector<Time>{{7, 0}}));
    CQ_EXPECT(!c.constant_duration || *c.constant_duration == d);
  }
  {  // an infinite duration: rows that never end agree with it
    RowBatchBuilder bb(schema, BatchKind::kLifetime, Duration::Infinite());
    AppendRow(bb, 1, "a", 1.0, true, {1, 0}, Time::Infinity());
    const Batch b = bb.Finish();
    CQ_EXPECT(b.constant_duration.has_value() && b.constant_duration->infinite);
  }
  {  // a stream has no duration whatever the plan says
    RowBatchBuilder bb(schema, BatchKind::kStream, d);
    AppendRow(bb, 1, "a", 1.0, true, {1, 0});
    const Batch b = bb.Finish();
    CQ_EXPECT(!b.constant_duration && b.other.empty());
  }
}

CQ_TEST(row_batch_builder_is_reused_after_finish) {
  auto schema = std::make_shared<const Schema>(kBuilderSchema);
  RowBatchBuilder bb(schema, BatchKind::kLifetime, std::nullopt);
  for (int64_t k = 0; k < 50; ++k) AppendRow(bb, k, std::to_string(k), k * 0.5, k % 2 == 0, {k, 0}, {k + 1, 0});
  const Batch first = bb.Finish();
  // A second, smaller batch, with different rows: the first one's columns are its own.
  AppendRow(bb, -1, "z", N, N, {100, 0}, Time::Infinity(), 4);
  AppendRow(bb, -2, N, 9.0, true, {101, 0}, {102, 0});
  const Batch second = bb.Finish();
  CQ_ASSERT(first.length == 50 && second.length == 2);
  I64s want;
  Strs want_s;
  for (int64_t k = 0; k < 50; ++k) {
    want.push_back(k);
    want_s.push_back(std::to_string(k));
  }
  CQ_EXPECT_EQ(ReadI64(first.columns[0]), want);
  CQ_EXPECT_EQ(ReadStr(first.columns[1]), want_s);
  CQ_EXPECT_EQ(EndsOf(first)[49], (Time{50, 0}));
  CQ_EXPECT(first.holders.empty());
  CQ_EXPECT_EQ(ReadI64(second.columns[0]), (I64s{-1, -2}));
  CQ_EXPECT_EQ(ReadStr(second.columns[1]), (Strs{"z", N}));
  CQ_EXPECT_EQ(ReadF64(second.columns[2]), (F64s{N, 9.0}));
  CQ_EXPECT_EQ(ReadBool(second.columns[3]), (Bools{N, true}));
  CQ_EXPECT_EQ(SyncOf(second), (std::vector<Time>{{100, 0}, {101, 0}}));
  CQ_EXPECT_EQ(HoldersOf(second), (std::vector<HolderId>{4, kNoHolder}));
  CQ_EXPECT_EQ(EndsOf(second)[1], (Time{102, 0}));
}

// ---- trackers ----------------------------------------------------------------------------------

const Schema kTrackSchema = {{"v", TypeId::kInt64}};

// What a tracker reports: per instant, the values that start and that end (sorted: bags).
struct Seen {
  Time t;
  std::vector<int64_t> starts, ends;
  bool operator==(const Seen& o) const { return t == o.t && starts == o.starts && ends == o.ends; }
  std::string ToString() const { return t.ToString() + " +" + Show(starts) + " -" + Show(ends); }
};

void PushRow(RowTracker& tr, int64_t v, Time sync, Time other = Time::Infinity(), HolderId holder = kNoHolder) {
  const Value vals[1] = {Value::Int(v)};
  tr.Push(RowOf(vals, sync, other, holder));
}

// Advances and collects the non-empty instants (an instant where only a ghost was may be visited
// with nothing in it).
std::vector<Seen> Advance(RowTracker& tr, Time progress) {
  std::vector<Seen> out;
  tr.AdvanceTo(progress, [&](Time t, const std::vector<uint32_t>& s, const std::vector<uint32_t>& e) {
    Seen x{t, {}, {}};
    for (uint32_t k : s) x.starts.push_back(tr.values(k)[0].i);
    for (uint32_t k : e) x.ends.push_back(tr.values(k)[0].i);
    std::sort(x.starts.begin(), x.starts.end());
    std::sort(x.ends.begin(), x.ends.end());
    if (!x.starts.empty() || !x.ends.empty()) out.push_back(x);
  });
  tr.Collect();
  return out;
}

std::vector<int64_t> AliveOf(const RowTracker& tr) {
  std::vector<uint32_t> slots;
  tr.Alive(slots);
  std::vector<int64_t> v;
  for (uint32_t s : slots) v.push_back(tr.values(s)[0].i);
  std::sort(v.begin(), v.end());
  return v;
}

Time T(int64_t tick, int64_t step = 0) { return {tick, step}; }

CQ_TEST(relation_tracker_reports_complete_instants_starts_and_ends) {
  RowRelationTracker tr(kTrackSchema, ExpirationPolicy::kLazy, true);
  PushRow(tr, 1, T(1), T(4));
  PushRow(tr, 2, T(1), T(3));
  PushRow(tr, 3, T(2), Time::Infinity());
  PushRow(tr, 4, T(3), T(3));  // a ghost
  PushRow(tr, 5, T(3), T(4));
  CQ_EXPECT_EQ(tr.next_instant(), T(1));
  // Instant 1 is complete only once progress passes it.
  CQ_EXPECT(Advance(tr, T(1)).empty());
  CQ_EXPECT_EQ(Advance(tr, T(1, 1)), (std::vector<Seen>{{T(1), {1, 2}, {}}}));
  CQ_EXPECT_EQ(AliveOf(tr), (std::vector<int64_t>{1, 2}));
  CQ_EXPECT_EQ(tr.next_instant(), T(2));
  CQ_EXPECT_EQ(Advance(tr, T(3)), (std::vector<Seen>{{T(2), {3}, {}}}));
  // At 3: 2 ends, 5 starts, the ghost 4 is in neither list.
  CQ_EXPECT_EQ(Advance(tr, T(3, 1)), (std::vector<Seen>{{T(3), {5}, {2}}}));
  CQ_EXPECT_EQ(AliveOf(tr), (std::vector<int64_t>{1, 3, 5}));
  CQ_EXPECT_EQ(tr.next_instant(), T(4));
  CQ_EXPECT_EQ(Advance(tr, Time::Infinity()), (std::vector<Seen>{{T(4), {}, {1, 5}}}));
  CQ_EXPECT_EQ(AliveOf(tr), (std::vector<int64_t>{3}));
  CQ_EXPECT(tr.any_alive());
  CQ_EXPECT_EQ(tr.kept_rows(), 1u);  // 3 never ends, and RSTREAM needs it
  CQ_EXPECT(tr.next_instant().IsInfinite());

  // Not tracking the alive, nothing is kept past its end (or at all, if it never ends).
  RowRelationTracker lean(kTrackSchema, ExpirationPolicy::kLazy, false);
  PushRow(lean, 1, T(1), T(2));
  PushRow(lean, 2, T(1), Time::Infinity());
  PushRow(lean, 3, T(1), T(1));
  CQ_EXPECT_EQ(Advance(lean, T(1, 1)), (std::vector<Seen>{{T(1), {1, 2}, {}}}));
  CQ_EXPECT_EQ(lean.kept_rows(), 1u);
  CQ_EXPECT_EQ(Advance(lean, T(5)), (std::vector<Seen>{{T(2), {}, {1}}}));
  CQ_EXPECT_EQ(lean.kept_rows(), 0u);
  CQ_EXPECT(!lean.any_alive());
}

CQ_TEST(relation_tracker_fixes_pending_ends_while_held_and_after_start) {
  RowRelationTracker tr(kTrackSchema, ExpirationPolicy::kLazy, false);
  PushRow(tr, 1, T(1), Time::Infinity(), 10);  // pending
  PushRow(tr, 2, T(1), Time::Infinity(), 11);  // pending
  PushRow(tr, 3, T(2), Time::Infinity(), 12);  // pending
  // 10's end comes while its start is still held; so does 12's, with a ghost's end.
  tr.PushEnd(10, T(5));
  tr.PushEnd(12, T(2));
  tr.PushEnd(99, T(3));  // an id this tracker never saw
  CQ_EXPECT_EQ(Advance(tr, T(2)), (std::vector<Seen>{{T(1), {1, 2}, {}}}));
  // 11 started with its end pending: fixed afterwards.
  tr.PushEnd(11, T(4, 1));
  CQ_EXPECT_EQ(tr.next_instant(), T(2));
  CQ_EXPECT_EQ(Advance(tr, T(10)), (std::vector<Seen>{{T(4, 1), {}, {2}}, {T(5), {}, {1}}}));
  CQ_EXPECT_EQ(tr.kept_rows(), 0u);
  // A holder id may come back for a new row once its end is out.
  PushRow(tr, 4, T(10), Time::Infinity(), 10);
  CQ_EXPECT_EQ(Advance(tr, T(11)), (std::vector<Seen>{{T(10), {4}, {}}}));
  tr.PushEnd(10, Time::Infinity());  // never ends
  CQ_EXPECT_EQ(Advance(tr, Time::Infinity()), (std::vector<Seen>{}));
  CQ_EXPECT_EQ(tr.kept_rows(), 0u);
}

CQ_TEST(relation_tracker_orders_starts_that_come_out_of_order) {
  // Two inputs interleaving: a start below the last one held goes to the late heap.
  RowRelationTracker tr(kTrackSchema, ExpirationPolicy::kInsertionSort, true);
  PushRow(tr, 1, T(5), T(9));
  PushRow(tr, 2, T(7), T(8));
  PushRow(tr, 3, T(3), T(6));
  PushRow(tr, 4, T(5), Time::Infinity(), 20);  // late, equal to a FIFO start, pending
  PushRow(tr, 5, T(2), T(2));                  // late ghost
  PushRow(tr, 6, T(4), T(5));
  tr.PushEnd(20, T(7));  // the end of a late held start
  CQ_EXPECT_EQ(tr.next_instant(), T(2));
  CQ_EXPECT_EQ(Advance(tr, T(6)), (std::vector<Seen>{{T(3), {3}, {}}, {T(4), {6}, {}}, {T(5), {1, 4}, {6}}}));
  CQ_EXPECT_EQ(AliveOf(tr), (std::vector<int64_t>{1, 3, 4}));
  CQ_EXPECT_EQ(Advance(tr, Time::Infinity()),
               (std::vector<Seen>{{T(6), {}, {3}}, {T(7), {2}, {4}}, {T(8), {}, {2}}, {T(9), {}, {1}}}));
  CQ_EXPECT(!tr.any_alive());
  CQ_EXPECT_EQ(tr.kept_rows(), 0u);
}

// ISTREAM's I(t) − D(t) when a loop turns a whole batch of rows at one instant: n rows end and n
// start together. Values repeat (a third as many as rows, or a single one: a loop whose rows
// multiply) or all differ, and mix NULLs, NaNs and both zeros, which the hash must see as equal
// just as the comparison does. The answer is checked against a multiset, and the work is
// counted: comparing every start with every end (n² comparisons: 27 s for 20,000 rows of paper
// 000's loop), or walking a run of equal values in a hash table for each row (one entry per row
// of a value that a loop multiplied), must not come back: the tracker counts the rows it compares
// and the table entries it visits.
CQ_TEST(bag_difference_of_a_large_instant_is_linear_and_exact) {
  const Schema schema = {{"k", TypeId::kInt64}, {"x", TypeId::kFloat64}};
  auto value = [](int64_t k, int64_t i) {
    switch (k % 5) {
      case 0: return Value::Null();
      case 1: return Value::Double(std::nan(""));
      case 2: return Value::Double(i % 2 ? 0.0 : -0.0);
      default: return Value::Double(static_cast<double>(k % 7));
    }
  };
  for (const int64_t distinct : {3, 1, 0}) {       // values: n / 3, a single one, all different (0)
    for (const int64_t n : {6, 40, 2000, 8000}) {  // (6: few enough to compare pairwise)
      const int64_t ends_mod = distinct == 0 ? n : distinct == 1 ? 1 : n / 3;
      const int64_t starts_mod = distinct == 0 ? n : distinct == 1 ? 1 : n / 2;
      RowRelationTracker tr(schema, ExpirationPolicy::kLazy, false);
      std::multiset<std::pair<int64_t, std::string>> want;  // (k, x as text): the starts less the ends
      auto key = [](int64_t k, const Value& x) {
        return std::pair<int64_t, std::string>{k, !x.valid          ? "null"
                                                  : std::isnan(x.d) ? "nan"
                                                                    : std::to_string(x.d + 0.0)};
      };
      for (int64_t i = 0; i < n; ++i) {  // ending at 2
        const int64_t k = (i * 7919) % ends_mod;
        const Value v[2] = {Value::Int(k), value(k, i)};
        tr.Push(RowOf(v, T(1), T(2), kNoHolder));
      }
      for (int64_t i = 0; i < n; ++i) {  // starting at 2, in another order
        const int64_t k = (i * 104729) % starts_mod;
        const Value v[2] = {Value::Int(k), value(k, i + 1)};
        tr.Push(RowOf(v, T(2), T(3), kNoHolder));
        want.insert(key(k, v[1]));
      }
      for (int64_t i = 0; i < n; ++i) {
        const int64_t k = (i * 7919) % ends_mod;
        if (auto it = want.find(key(k, value(k, i))); it != want.end()) want.erase(it);
      }
      std::vector<uint32_t> out;
      uint64_t work = 0;
      tr.AdvanceTo(T(2, 1), [&](Time t, const std::vector<uint32_t>& starts, const std::vector<uint32_t>& ends) {
        if (t != T(2)) return;
        const uint64_t before = tr.bag_work();
        tr.AppendBagDifference(starts, ends, out);
        work = tr.bag_work() - before;
        CQ_EXPECT_EQ(starts.size(), static_cast<size_t>(n));
        CQ_EXPECT_EQ(ends.size(), static_cast<size_t>(n));
      });
      std::multiset<std::pair<int64_t, std::string>> got;
      for (uint32_t s : out) got.insert(key(tr.values(s)[0].i, tr.values(s)[1]));
      CQ_EXPECT(got == want);
      CQ_EXPECT_EQ(out.size(), want.size());
      // A row meets its value's entry (and a rare hash collision): a few steps per row. n² / 4
      // would be 1,000,000 at n = 2,000.
      if (n >= 2000) CQ_EXPECT(work <= static_cast<uint64_t>(4 * n));
    }
  }
}

CQ_TEST(negative_tracker_reports_positives_and_negatives_by_instant) {
  RowNegativeTracker tr(kTrackSchema, true);
  PushRow(tr, 1, T(1));  // positive at 1
  PushRow(tr, 2, T(1));
  PushRow(tr, 2, T(2));        // a second 2
  PushRow(tr, 1, T(3), T(1));  // negative at 3 of the 1 from 1
  PushRow(tr, 7, T(3));        // a ghost at 3: positive and negative at once
  PushRow(tr, 7, T(3), T(3));
  PushRow(tr, 2, T(4), T(1));  // negative of one of the 2s
  CQ_EXPECT_EQ(tr.next_instant(), T(1));
  CQ_EXPECT(Advance(tr, T(1)).empty());
  CQ_EXPECT_EQ(Advance(tr, T(2, 1)), (std::vector<Seen>{{T(1), {1, 2}, {}}, {T(2), {2}, {}}}));
  CQ_EXPECT_EQ(AliveOf(tr), (std::vector<int64_t>{1, 2, 2}));
  // A ghost's positive and negative come in the same instant (the consumers cancel them as bags,
  // as with the batch form's NegativeTracker); it is never alive after it.
  CQ_EXPECT_EQ(Advance(tr, T(3, 1)), (std::vector<Seen>{{T(3), {7}, {1, 7}}}));
  CQ_EXPECT_EQ(AliveOf(tr), (std::vector<int64_t>{2, 2}));
  CQ_EXPECT_EQ(Advance(tr, Time::Infinity()), (std::vector<Seen>{{T(4), {}, {2}}}));
  CQ_EXPECT_EQ(AliveOf(tr), (std::vector<int64_t>{2}));
  CQ_EXPECT_EQ(tr.kept_rows(), 1u);
  CQ_EXPECT(tr.next_instant().IsInfinite());

  RowNegativeTracker lean(kTrackSchema, false);
  PushRow(lean, 1, T(1));
  PushRow(lean, 1, T(2), T(1));
  CQ_EXPECT_EQ(Advance(lean, T(5)), (std::vector<Seen>{{T(1), {1}, {}}, {T(2), {}, {1}}}));
  CQ_EXPECT_EQ(lean.kept_rows(), 0u);
}

// A script of tracker input, run on one tracker straight through and on another that is
// snapshotted and restored (into a fresh tracker) after step `cut`: both must report the same.
struct Step {
  enum Kind { kPush, kEnd, kAdvance } kind;
  int64_t v;
  Time sync, other;
  HolderId holder;
};

std::vector<Seen> RunScript(const std::vector<Step>& script, std::unique_ptr<Instants> (*make)(), size_t cut,
                            std::vector<std::vector<int64_t>>* alive) {
  std::unique_ptr<Instants> state = make();
  RowTracker* tr = &state->rows();
  std::vector<Seen> seen;
  for (size_t k = 0; k < script.size(); ++k) {
    if (k == cut) {
      // (The snapshot is the batch representation's: the rows go over and come back.)
      SnapshotWriter w;
      state->Snapshot(w);
      std::unique_ptr<Instants> fresh = make();
      PushRow(fresh->rows(), 1234, T(0));  // something to be replaced
      SnapshotReader r(w.bytes().data(), w.bytes().size());
      fresh->Restore(r);
      state = std::move(fresh);
      tr = &state->rows();
    }
    const Step& s = script[k];
    switch (s.kind) {
      case Step::kPush: PushRow(*tr, s.v, s.sync, s.other, s.holder); break;
      case Step::kEnd: tr->PushEnd(s.holder, s.other); break;
      case Step::kAdvance: {
        auto x = Advance(*tr, s.sync);
        seen.insert(seen.end(), x.begin(), x.end());
        alive->push_back(AliveOf(*tr));
        break;
      }
    }
  }
  return seen;
}

std::unique_ptr<Instants> MakeDirect() {
  return std::make_unique<Instants>(kTrackSchema, false, ExpirationPolicy::kLazy, true, false);
}
std::unique_ptr<Instants> MakeNegative() {
  return std::make_unique<Instants>(kTrackSchema, true, ExpirationPolicy::kLazy, true, false);
}

CQ_TEST(trackers_snapshot_and_restore_mid_stream) {
  using K = Step::Kind;
  const Time inf = Time::Infinity();
  // Direct: held starts (known, pending, fixed while held), late starts (known, pending, fixed
  // while held and after their start), started pending ends, expiring ends, ghosts.
  const std::vector<Step> direct = {
      {K::kPush, 1, T(1), T(6), kNoHolder},
      {K::kPush, 2, T(2), inf, 5},
      {K::kPush, 3, T(2), inf, 6},
      {K::kAdvance, 0, T(2), {}, 0},
      {K::kPush, 4, T(3), T(3), kNoHolder},
      {K::kPush, 5, T(2), T(4), kNoHolder},
      {K::kPush, 9, T(2), inf, 8},
      {K::kPush, 10, T(2), inf, 9},
      {K::kEnd, 0, {}, T(5), 6},
      {K::kEnd, 0, {}, T(6), 8},
      {K::kPush, 6, T(4), inf, 7},
      {K::kAdvance, 0, T(3), {}, 0},
      {K::kPush, 7, T(6), T(8), kNoHolder},
      {K::kEnd, 0, {}, T(7), 5},
      {K::kEnd, 0, {}, T(8), 9},
      {K::kAdvance, 0, T(4, 1), {}, 0},
      {K::kEnd, 0, {}, T(9), 7},
      {K::kPush, 8, T(7), inf, kNoHolder},
      {K::kAdvance, 0, T(6, 1), {}, 0},
      {K::kAdvance, 0, inf, {}, 0},
  };
  // Negative: positives and negatives pending in several instants, a ghost, duplicates.
  const HolderId h = kNoHolder;
  const std::vector<Step> negative = {
      {K::kPush, 1, T(1), inf, h},      {K::kPush, 1, T(1), inf, h},      {K::kPush, 2, T(2), inf, h},
      {K::kAdvance, 0, T(1, 1), {}, h}, {K::kPush, 3, T(3), inf, h},      {K::kPush, 1, T(3), T(1), h},
      {K::kPush, 3, T(3), T(3), h},     {K::kPush, 4, T(5), inf, h},      {K::kAdvance, 0, T(3), {}, h},
      {K::kPush, 2, T(6), T(2), h},     {K::kAdvance, 0, T(5, 1), {}, h}, {K::kPush, 1, T(7), T(1), h},
      {K::kAdvance, 0, inf, {}, h},
  };
  for (auto [script, make] : {std::pair{&direct, &MakeDirect}, std::pair{&negative, &MakeNegative}}) {
    std::vector<std::vector<int64_t>> alive_straight;
    const std::vector<Seen> straight = RunScript(*script, make, script->size(), &alive_straight);
    CQ_EXPECT(!straight.empty());
    for (size_t cut = 0; cut <= script->size(); ++cut) {
      std::vector<std::vector<int64_t>> alive;
      CQ_EXPECT_EQ(RunScript(*script, make, cut, &alive), straight);
      CQ_EXPECT_EQ(alive, alive_straight);
    }
  }
  // The direct script's expected output, so that both runs being wrong alike fails too.
  std::vector<std::vector<int64_t>> alive;
  CQ_EXPECT_EQ(RunScript(direct, MakeDirect, direct.size(), &alive), (std::vector<Seen>{{T(1), {1}, {}},
                                                                                        {T(2), {2, 3, 5, 9, 10}, {}},
                                                                                        {T(4), {6}, {5}},
                                                                                        {T(5), {}, {3}},
                                                                                        {T(6), {7}, {1, 9}},
                                                                                        {T(7), {8}, {2}},
                                                                                        {T(8), {}, {7, 10}},
                                                                                        {T(9), {}, {6}}}));
  CQ_EXPECT_EQ(alive.back(), (std::vector<int64_t>{8}));
  CQ_EXPECT_EQ(RunScript(negative, MakeNegative, negative.size(), &alive), (std::vector<Seen>{{T(1), {1, 1}, {}},
                                                                                              {T(2), {2}, {}},
                                                                                              {T(3), {3}, {1, 3}},
                                                                                              {T(5), {4}, {}},
                                                                                              {T(6), {}, {2}},
                                                                                              {T(7), {}, {1}}}));
  CQ_EXPECT_EQ(alive.back(), (std::vector<int64_t>{4}));
}

// A union in a loop wakes itself: a row of the running instant goes straight on and leaves it as
// it was (the executor need not visit it), a row of a later instant is kept and wakes it, with
// that instant as its next firing.
CQ_TEST(a_loop_union_wakes_itself_only_for_a_row_it_keeps) {
  UnionAll u({{"v", TypeId::kInt64}}, BatchKind::kLifetime, 2);
  std::unique_ptr<RowOperator> rows = u.ToRows();
  CQ_ASSERT(rows != nullptr);
  CQ_EXPECT(rows->advances_when_due() && rows->wakes_itself());
  struct Out final : RowEmitter {
    std::vector<int64_t> ticks;
    void Emit(const Row& r) override { ticks.push_back(r.sync.tick); }
    void EmitEnd(HolderId, Time) override {}
  } out;
  bool woken = false;
  out.set_wake(&woken);
  const Time now{5, 0};
  out.set_now(&now);
  const Value v[1] = {Value::Int(7)};
  Row r;
  r.values = v;
  r.sync = now;
  r.other = Time{5, 1};
  rows->Push(0, r, out);
  CQ_EXPECT(!woken);
  CQ_EXPECT(out.ticks == std::vector<int64_t>{5});
  r.sync = Time{6, 0};
  r.other = Time{6, 1};
  rows->Push(1, r, out);
  CQ_EXPECT(woken);
  CQ_EXPECT(out.ticks == std::vector<int64_t>{5});
  CQ_EXPECT(rows->next_firing(0) == (Time{6, 0}));
  rows->AdvanceTo(Time{6, 1}, out);
  CQ_EXPECT((out.ticks == std::vector<int64_t>{5, 6}));
}

}  // namespace
}  // namespace cq::test
