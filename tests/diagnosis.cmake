# Unit tests of the diagnosis library (call-graph prefix trees) and its emulator (ctest -L unit).
# Included from tests/CMakeLists.txt.
add_executable(parastack_diagnosis_tests
  unit/rank_set_test.cc
  unit/prefix_tree_test.cc
  unit/tree_serialize_test.cc
  unit/tree_render_test.cc
  unit/stackbench_test.cc
  unit/progress_test.cc
  unit/stack_order_test.cc)
target_link_libraries(parastack_diagnosis_tests PRIVATE parastack::diagnosis parastack::stackbench
                      nlohmann_json::nlohmann_json GTest::gtest_main parastack_warnings)
gtest_discover_tests(parastack_diagnosis_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)
