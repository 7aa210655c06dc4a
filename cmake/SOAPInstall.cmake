# Installs headers, static libraries, tools and a CMake package so other
# MLIR-based compilers can `find_package(SOAP)` and link SOAP::SOAPPasses.
include(CMakePackageConfigHelpers)

get_property(SOAP_EXPORTED_TARGETS GLOBAL PROPERTY SOAP_EXPORTED_TARGETS)
install(TARGETS ${SOAP_EXPORTED_TARGETS}
  EXPORT SOAPTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/soap
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/soap
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.inc")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/dialects/soap/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/soap/Dialect
  FILES_MATCHING PATTERN "*.td")

set(SOAP_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/soap)
install(EXPORT SOAPTargets NAMESPACE SOAP:: DESTINATION ${SOAP_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/SOAPConfig.cmake.in
  ${PROJECT_BINARY_DIR}/SOAPConfig.cmake
  INSTALL_DESTINATION ${SOAP_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/SOAPConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/SOAPConfig.cmake
  ${PROJECT_BINARY_DIR}/SOAPConfigVersion.cmake
  DESTINATION ${SOAP_INSTALL_CMAKEDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/machines/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/soap/machines
  FILES_MATCHING PATTERN "*.json")

# The runtime that soap-translate --soap-to-executable links into every
# executable; an installed soap-translate looks for it in the libdir.
install(TARGETS soaprt soaprt_driver ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TARGET soaprt_gpu)
  install(TARGETS soaprt_gpu ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
