# Installation and the Debian package (`make package`: build/dev/parallax_<version>_<arch>.deb).
#   /usr/bin                 parallax, parallax-cli, parallax-worker (each finds the others beside it)
#   /usr/lib/parallax        libparallax-loopback.so (preloaded into mpirun: core/launch/LaunchPlan.cpp)
#   /usr/share/parallax      the example runs and cluster profile
#   /usr/share/applications  parallax.desktop; the icon in /usr/share/icons/hicolor/scalable/apps
#   /usr/share/doc/parallax  the guide, the spec reference and the other docs, the copyright
# The library dependencies are computed (dpkg-shlibdeps); the programs a run starts are named.
include(GNUInstallDirs)

install(TARGETS parallax-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET parallax-worker)
  install(TARGETS parallax-worker RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET parallax)
  install(TARGETS parallax RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(TARGETS parallax_loopback LIBRARY DESTINATION lib/parallax)
install(FILES "${PROJECT_SOURCE_DIR}/packaging/debian/copyright" DESTINATION ${PARALLAX_INSTALL_DOCDIR})
install(FILES "${PROJECT_SOURCE_DIR}/README.md" DESTINATION ${PARALLAX_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME parallax)
set(CPACK_PACKAGE_VENDOR "The Parallax developers")
set(CPACK_PACKAGE_CONTACT "The Parallax developers <parallax@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Console for distributed training (LibTorch, MPI, NCCL, Slurm)")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
       "Pick a model, a dataset and a parallel layout (data parallel, ZeRO, tensor and pipeline parallel) in "
       "forms; Parallax launches an MPI/NCCL LibTorch training backend on this machine, on hosts over ssh or "
       "through Slurm, and shows loss curves, throughput, per-device utilization, the pipeline schedule with its "
       "measured bubbles and every rank's log, kept in SQLite.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Programs a run starts, which no library dependency brings.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin, openssh-client")
# LibTorch's CPU matrix products through OpenBLAS rather than the reference BLAS libblas3 gives.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libopenblas0-openmp, dataset-fashion-mnist")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "slurm-client")
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_INSTALL_DIRECTORY /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
