//===- DimKind.h - kinds of iteration dimensions ----------------*- C++ -*-===//

#ifndef SOAP_GRAPH_DIMKIND_H
#define SOAP_GRAPH_DIMKIND_H

#include <optional>
#include <string_view>

namespace soap {

/// What splitting a loop means: data parallelism (Sample), spatial/sequence
/// parallelism (Attribute), model parallelism (Parameter), or partial sums
/// (Reduction).
enum class DimKind { Sample, Attribute, Parameter, Reduction };

/// "sample", "attribute", "parameter" or "reduction".
inline const char *dimKindName(DimKind kind) {
  switch (kind) {
  case DimKind::Sample:
    return "sample";
  case DimKind::Attribute:
    return "attribute";
  case DimKind::Parameter:
    return "parameter";
  case DimKind::Reduction:
    return "reduction";
  }
  return "unknown";
}

/// The kind named `name`, if any.
inline std::optional<DimKind> parseDimKind(std::string_view name) {
  for (DimKind kind : {DimKind::Sample, DimKind::Attribute, DimKind::Parameter,
                       DimKind::Reduction})
    if (name == dimKindName(kind))
      return kind;
  return std::nullopt;
}

} // namespace soap

#endif // SOAP_GRAPH_DIMKIND_H
