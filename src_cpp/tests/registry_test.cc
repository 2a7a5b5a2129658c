// The operator registry and its descriptors (operators/descriptor.h): every operator is described
// once, under its own name; a negative form belongs to a registered operator; and an operator that
// emits another kind than its descriptor says is refused when it is built, so a wrong descriptor
// cannot mislead the planner quietly.
#include "operators/registry.h"
#include "base/json.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

using D = OperatorDescriptor;

const Schema kSchema = {{"v", TypeId::kInt64}};

OperatorSpec Spec(const std::string& op, const std::string& json) {
  OperatorSpec spec;
  spec.id = 1;
  spec.op = op;
  spec.params = json::Parse(json);
  return spec;
}

// A factory that builds the registered [Range 5] window, which emits a relation.
OperatorFactory WindowFactory() {
  return [](const OperatorSpec&, const std::vector<OperatorInput>& in, const OperatorContext& ctx) {
    return OperatorRegistry::Global().Create(
        Spec("window", R"({"op": "window", "kind": "range", "range": {"ticks": 5}})"), in, ctx);
  };
}

CQ_TEST(every_operator_is_described_under_its_name) {
  const OperatorRegistry& r = OperatorRegistry::Global();
  for (const D* d : r.descriptors()) {
    CQ_EXPECT(!d->description.empty());
    CQ_EXPECT(&r.descriptor(d->name) == d);
  }
  // The facts the planner and the engine rely on, for the operators they name.
  CQ_EXPECT(r.descriptor("stream_scan").role == D::Role::kStreamSource);
  CQ_EXPECT(r.descriptor("relation_scan").role == D::Role::kRelationSource);
  CQ_EXPECT(r.descriptor("sink").role == D::Role::kOutput);
  CQ_EXPECT(r.descriptor("rstream").firing == D::Firing::kEveryTick);
  CQ_EXPECT(r.descriptor("union_all").keeps_identity);
  CQ_EXPECT(!r.descriptor("reissue_holders").keeps_identity);
  CQ_EXPECT(r.has_negative("window") && r.has_negative("row_window") && !r.has_negative("join"));
  CQ_EXPECT_THROWS(r.descriptor("no_such_operator"), CqError);
}

CQ_TEST(registering_twice_or_a_negative_form_of_nothing_is_refused) {
  OperatorRegistry r;
  r.Register({.name = "w", .description = "a window", .output = D::Output::kRelation}, WindowFactory());
  CQ_EXPECT_THROWS((r.Register({.name = "w", .description = "again"}, WindowFactory())), CqError);
  CQ_EXPECT_THROWS(r.RegisterNegative("v", WindowFactory()), CqError);
  r.RegisterNegative("w", WindowFactory());
  CQ_EXPECT(r.has_negative("w"));
}

CQ_TEST(an_operator_that_emits_another_kind_than_described_is_refused) {
  OperatorRegistry r;
  r.Register({.name = "honest", .description = "a window", .output = D::Output::kRelation}, WindowFactory());
  r.Register({.name = "lying", .description = "a window", .output = D::Output::kStream}, WindowFactory());
  r.Register({.name = "as_input", .description = "a window", .output = D::Output::kAsInput}, WindowFactory());
  const std::vector<OperatorInput> in = {{&kSchema, BatchKind::kStream}};
  OperatorContext ctx;
  CQ_EXPECT(r.Create(Spec("honest", "{}"), in, ctx)->output_kind() == BatchKind::kLifetime);
  CQ_EXPECT_THROWS(r.Create(Spec("lying", "{}"), in, ctx), CqError);
  // The window turns its stream into a relation: not the kind of its input.
  CQ_EXPECT_THROWS(r.Create(Spec("as_input", "{}"), in, ctx), CqError);
  CQ_EXPECT_THROWS(r.Create(Spec("unknown", "{}"), in, ctx), CqError);
}

}  // namespace
}  // namespace cq::test
