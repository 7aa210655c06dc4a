//===- Registration.h - one call to register SOAP ---------------*- C++ -*-===//

#ifndef SOAP_DIALECT_REGISTRATION_H
#define SOAP_DIALECT_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace soap {

/// Registers the SOAP dialect, the dialects its passes create ops of, and
/// the partitioning interface's external models for upstream ops.
void registerSoapDialects(mlir::DialectRegistry &registry);

/// Registers every SOAP pass with the global pass registry (so that
/// `--soap-*` options exist in mlir-opt-like tools).
void registerSoapPasses();

/// Both of the above.
inline void registerSoap(mlir::DialectRegistry &registry) {
  registerSoapDialects(registry);
  registerSoapPasses();
}

} // namespace soap

#endif // SOAP_DIALECT_REGISTRATION_H
