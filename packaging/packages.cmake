# Debian packages (CPack): `parastack` (the programs, the site configuration as a conffile, the man
# pages and guides) and `parastack-slurm` (the SPANK plugin, bound to the Slurm release it was
# built against, so that a node without Slurm needs none of it). packaging/build-packages.sh
# configures with the prefix /usr and runs cpack. The source tarball (package_source) is what
# packaging/parastack.spec builds RPMs from.
set(CPACK_PACKAGE_NAME parastack)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "parastack developers <parastack@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "statistical hang detection for MPI jobs")
set(CPACK_PACKAGE_DESCRIPTION
    "parastack watches a running MPI job with negligible overhead, decides statistically that it has hung (no timeout), names the ranks to blame in a report with the merged stacks of all ranks, and ends the job. parastack run watches a job started from a shell; pbs_parastack submits Torque/PBS jobs watched.")
set(CPACK_GENERATOR DEB)
set(CPACK_SET_DESTDIR ON)  # /etc/parastack is an absolute destination
set(CPACK_COMPONENTS_ALL tools slurm)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # dpkg-shlibdeps: libunwind, Open MPI, libstdc++...
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME parastack)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "openmpi-bin")
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "graphviz")
set(CPACK_DEBIAN_TOOLS_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_LIST_DIR}/debian/conffiles)
set(CPACK_DEBIAN_SLURM_PACKAGE_NAME parastack-slurm)
set(CPACK_COMPONENT_SLURM_DESCRIPTION
    "parastack's Slurm SPANK plugin: sbatch, srun and salloc --parastack watch a job for hangs.")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")

# Slurm loads only plugins of its own release (major.minor): from slurm/slurm_version.h.
if(SLURM_INCLUDE_DIR AND EXISTS ${SLURM_INCLUDE_DIR}/slurm/slurm_version.h)
  file(STRINGS ${SLURM_INCLUDE_DIR}/slurm/slurm_version.h slurm_version_line REGEX "define SLURM_VERSION_NUMBER")
  string(REGEX MATCH "0x([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])" _ "${slurm_version_line}")
  math(EXPR slurm_major "0x${CMAKE_MATCH_1}")
  math(EXPR slurm_minor "0x${CMAKE_MATCH_2}")
  math(EXPR slurm_next_minor "${slurm_minor} + 1")
  set(slurm_release "${slurm_major}.${slurm_minor}")
  if(slurm_minor LESS 10)
    set(slurm_release "${slurm_major}.0${slurm_minor}")
  endif()
  set(slurm_next "${slurm_major}.${slurm_next_minor}")
  if(slurm_next_minor LESS 10)
    set(slurm_next "${slurm_major}.0${slurm_next_minor}")
  endif()
  set(CPACK_DEBIAN_SLURM_PACKAGE_DEPENDS
      "parastack (= ${PROJECT_VERSION}), slurm-wlm-basic-plugins (>= ${slurm_release}), slurm-wlm-basic-plugins (<< ${slurm_next})")
else()
  set(CPACK_DEBIAN_SLURM_PACKAGE_DEPENDS "parastack (= ${PROJECT_VERSION})")
endif()

set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_PACKAGE_FILE_NAME parastack-${PROJECT_VERSION})
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/\\\\.cache/" "~$")
include(CPack)
cpack_add_component(tools DISPLAY_NAME "parastack")
cpack_add_component(slurm DISPLAY_NAME "parastack-slurm" DEPENDS tools)
