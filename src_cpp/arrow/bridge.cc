#include "arrow/bridge.h"

#include <cstring>
#include <memory>

#include "base/errors.h"

namespace cq {

namespace {

// Shared by every Buffer imported from one ArrowArray: releasing it returns the memory to its
// producer (pyarrow), once, when the last column viewing it is destroyed.
struct ImportedArrayOwner {
  ArrowArray array;
  explicit ImportedArrayOwner(ArrowArray* src) {
    array = *src;
    src->release = nullptr;  // moved: the producer's struct no longer owns the data
  }
  ~ImportedArrayOwner() {
    if (array.release) array.release(&array);
  }
};

Buffer View(const std::shared_ptr<void>& owner, const void* p, int64_t size) {
  Buffer b;
  b.owner = owner;
  b.data = const_cast<uint8_t*>(static_cast<const uint8_t*>(p));
  b.size = size;
  return b;
}

Column ImportColumn(const std::shared_ptr<void>& owner, const ArrowSchema* s, const ArrowArray* a,
                    int64_t parent_offset, int64_t length) {
  auto type = TypeFromArrowFormat(s->format ? s->format : "");
  std::string name = s->name ? s->name : "";
  if (!type) {
    throw CqError(ErrorKind::kInput, "column '" + name + "': unsupported Arrow format '" +
                                         (s->format ? s->format : "") +
                                         "' (expected int64 'l', float64 'g', utf8 'u', bool 'b' or null 'n')");
  }
  if (s->dictionary) throw CqError(ErrorKind::kInput, "column '" + name + "': dictionary arrays are not supported");
  const int64_t off = a->offset + parent_offset;
  Column c;
  c.type = *type;
  c.length = length;
  if (*type == TypeId::kNull) {
    c.null_count = length;
    return c;
  }
  const void* validity = a->n_buffers > 0 ? a->buffers[0] : nullptr;
  // Shift the validity (and bool) bitmaps into place only when the offset is not byte-aligned;
  // every other buffer is a view.
  auto bits = [&](const void* p) -> Buffer {
    if (!p) return {};
    if (off % 8 == 0) return View(owner, static_cast<const uint8_t*>(p) + off / 8, bitmap::Bytes(length));
    Buffer b = Buffer::Allocate(bitmap::Bytes(length));
    bitmap::CopyBits(static_cast<const uint8_t*>(p), off, length, b.data);
    return b;
  };
  if (validity && a->null_count != 0) {
    c.validity = bits(validity);
    c.null_count = length - bitmap::CountSet(c.validity.data, length);
    if (c.null_count == 0) c.validity = {};
  }
  switch (*type) {
    case TypeId::kInt64:
    case TypeId::kFloat64:
      c.values = View(owner, static_cast<const uint8_t*>(a->buffers[1]) + off * 8, length * 8);
      break;
    case TypeId::kBool: c.values = bits(a->buffers[1]); break;
    case TypeId::kUtf8: {
      const int32_t* offsets = static_cast<const int32_t*>(a->buffers[1]) + off;
      c.offsets = View(owner, offsets, (length + 1) * 4);
      // Offsets stay absolute into the data buffer, so the data needs no adjustment.
      int64_t data_size = length > 0 ? offsets[length] : 0;
      c.values = View(owner, a->buffers[2] ? a->buffers[2] : offsets, data_size);
      break;
    }
    case TypeId::kNull: break;
  }
  return c;
}

// ---- export ----------------------------------------------------------------------------------

struct ExportedSchemaData {
  std::string format, name;
  std::vector<std::unique_ptr<ArrowSchema>> children;
  std::vector<ArrowSchema*> child_ptrs;
};

void ReleaseSchema(ArrowSchema* s) {
  if (!s || !s->release) return;
  auto* d = static_cast<ExportedSchemaData*>(s->private_data);
  for (ArrowSchema* c : d->child_ptrs)
    if (c->release) c->release(c);
  delete d;
  s->release = nullptr;
}

struct ExportedArrayData {
  std::vector<Buffer> keep;  // the buffers the consumer is reading
  std::vector<const void*> buffers;
  std::vector<std::unique_ptr<ArrowArray>> children;
  std::vector<ArrowArray*> child_ptrs;
};

void ReleaseArray(ArrowArray* a) {
  if (!a || !a->release) return;
  auto* d = static_cast<ExportedArrayData*>(a->private_data);
  for (ArrowArray* c : d->child_ptrs)
    if (c->release) c->release(c);
  delete d;
  a->release = nullptr;
}

void FillSchema(ArrowSchema* s, const std::string& format, const std::string& name, int64_t flags, int64_t n_children) {
  auto* d = new ExportedSchemaData{format, name, {}, {}};
  for (int64_t i = 0; i < n_children; ++i) {
    d->children.push_back(std::make_unique<ArrowSchema>());
    d->child_ptrs.push_back(d->children.back().get());
  }
  s->format = d->format.c_str();
  s->name = d->name.c_str();
  s->metadata = nullptr;
  s->flags = flags;
  s->n_children = n_children;
  s->children = n_children ? d->child_ptrs.data() : nullptr;
  s->dictionary = nullptr;
  s->release = ReleaseSchema;
  s->private_data = d;
}

void FillColumnArray(ArrowArray* a, const Column& c) {
  auto* d = new ExportedArrayData;
  a->length = c.length;
  a->null_count = c.type == TypeId::kNull ? c.length : c.null_count;
  a->offset = 0;
  a->n_children = 0;
  a->children = nullptr;
  a->dictionary = nullptr;
  if (c.type == TypeId::kNull) {
    a->n_buffers = 0;
  } else {
    d->keep = {c.validity, c.values, c.offsets};
    d->buffers.push_back(c.null_count ? c.validity.data : nullptr);
    if (c.type == TypeId::kUtf8) {
      d->buffers.push_back(c.offsets.data);
      d->buffers.push_back(c.values.data);
    } else {
      d->buffers.push_back(c.values.data);
    }
    a->n_buffers = static_cast<int64_t>(d->buffers.size());
  }
  a->buffers = d->buffers.empty() ? nullptr : d->buffers.data();
  a->release = ReleaseArray;
  a->private_data = d;
}

}  // namespace

ImportedBatch ImportStruct(const ArrowSchema* schema, ArrowArray* array) {
  if (!schema || !array || !array->release)
    throw CqError(ErrorKind::kInput, "an Arrow record batch was expected, found a released or null array");
  if (std::strcmp(schema->format, "+s") != 0)
    throw CqError(ErrorKind::kInput, std::string("an Arrow record batch (struct '+s') was expected, found format '") +
                                         schema->format + "'");
  if (schema->n_children != array->n_children)
    throw CqError(ErrorKind::kInput, "Arrow schema and array disagree on the number of columns");
  auto owner_impl = std::make_shared<ImportedArrayOwner>(array);
  std::shared_ptr<void> owner = owner_impl;
  const ArrowArray* a = &owner_impl->array;
  if (a->null_count > 0)
    throw CqError(ErrorKind::kInput, "a record batch with null rows (struct-level nulls) is not supported");
  ImportedBatch out;
  out.length = a->length;
  for (int64_t i = 0; i < schema->n_children; ++i) {
    const ArrowSchema* cs = schema->children[i];
    out.names.emplace_back(cs->name ? cs->name : "");
    out.columns.push_back(ImportColumn(owner, cs, a->children[i], a->offset, a->length));
  }
  return out;
}

void ExportStruct(const std::vector<std::string>& names, std::span<const Column> columns, int64_t length,
                  ArrowSchema* schema, ArrowArray* array) {
  const int64_t n = static_cast<int64_t>(columns.size());
  FillSchema(schema, "+s", "", 0, n);
  for (int64_t i = 0; i < n; ++i)
    FillSchema(schema->children[i], ArrowFormat(columns[i].type), names[i], ARROW_FLAG_NULLABLE, 0);

  auto* d = new ExportedArrayData;
  d->buffers.push_back(nullptr);  // a struct's own validity: no null rows
  for (int64_t i = 0; i < n; ++i) {
    d->children.push_back(std::make_unique<ArrowArray>());
    d->child_ptrs.push_back(d->children.back().get());
    FillColumnArray(d->child_ptrs.back(), columns[i]);
  }
  array->length = length;
  array->null_count = 0;
  array->offset = 0;
  array->n_buffers = 1;
  array->n_children = n;
  array->buffers = d->buffers.data();
  array->children = n ? d->child_ptrs.data() : nullptr;
  array->dictionary = nullptr;
  array->release = ReleaseArray;
  array->private_data = d;
}

}  // namespace cq
