//===- ToExecutable.h - a lowered module as a native executable -*- C++ -*-===//

#ifndef SOAP_TOOLS_TRANSLATE_TOEXECUTABLE_H
#define SOAP_TOOLS_TRANSLATE_TOEXECUTABLE_H

namespace soap {

/// Registers --soap-to-executable: a module lowered by --soap-lower-cpu
/// (LLVM dialect) -> LLVM IR -> optimized object code for this machine ->
/// linked by the system compiler driver with libsoaprt, its driver,
/// OpenBLAS and libm. The executable's bytes go to the output file.
void registerToExecutableTranslation();

} // namespace soap

#endif // SOAP_TOOLS_TRANSLATE_TOEXECUTABLE_H
