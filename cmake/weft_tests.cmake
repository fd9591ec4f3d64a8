# weft_add_test(<source> <cpu|gpu>): one test program, its ctest entries, TIMEOUT, labels and
# SKIP_RETURN_CODE 77. The source's "weft-test:" line gives ranks= and timeout= (see
# tests/CMakeLists.txt). Programs link the static library so that they reach internals.
set(WEFT_TEST_EXTRA_RANKS "8" CACHE STRING "World sizes every multi-rank GPU test also runs at")
# Every GPU test's environment: NVLink multicast off in NCCL, NVSHMEM and torch (docs/architecture.md, section 7).
set(WEFT_GPU_TEST_ENV "NCCL_NVLS_ENABLE=0;NVSHMEM_DISABLE_NVLS=1;TORCH_SYMM_MEM_DISABLE_MULTICAST=1")
# The Python tests' and tutorials': the package of this tree over this build's library.
set(WEFT_PYTHON_TEST_ENV "PYTHONPATH=${PROJECT_SOURCE_DIR}/python;WEFT_LIBRARY=$<TARGET_FILE:weft>")

# The environment of a GPU test at n ranks: WEFT_GPU_TEST_ENV, with WEFT_SHARE_GPUS=1 up to
# WEFT_TEST_SHARE_RANKS ranks (a machine with fewer GPUs runs them on the ones it has).
set(WEFT_TEST_SHARE_RANKS 4 CACHE STRING "World sizes up to this run on shared GPUs where there are fewer")
function(weft_share_env n out)
  if(n LESS_EQUAL WEFT_TEST_SHARE_RANKS)
    set(${out} "${WEFT_GPU_TEST_ENV};WEFT_SHARE_GPUS=1" PARENT_SCOPE)
  else()
    set(${out} "${WEFT_GPU_TEST_ENV}" PARENT_SCOPE)
  endif()
endfunction()

function(weft_add_test src kind)
  get_filename_component(name ${src} NAME_WE)
  file(STRINGS ${src} spec REGEX "weft-test:" LIMIT_COUNT 1)
  set(ranks "2;4")
  set(timeout 120)
  if(spec MATCHES "ranks=driver")
    set(ranks driver)
  elseif(spec MATCHES "ranks=([0-9,]+)")
    string(REPLACE "," ";" ranks "${CMAKE_MATCH_1}")
  endif()
  if(kind STREQUAL "gpu" AND "4" IN_LIST ranks)
    # Tests that scale (they run at 4) also run at an odd world size, 3, and at the extra world
    # sizes (default 8, the papers' node). Up to 4 ranks share the GPUs where there are fewer
    # (WEFT_SHARE_GPUS: kernels take turns, so one GPU checks every multi-rank path); the extra
    # sizes skip (77) through weftrun on machines with fewer GPUs.
    if(NOT "3" IN_LIST ranks)
      list(APPEND ranks 3)
    endif()
    foreach(n IN LISTS WEFT_TEST_EXTRA_RANKS)
      if(NOT n IN_LIST ranks)
        list(APPEND ranks ${n})
      endif()
    endforeach()
  endif()
  if(spec MATCHES "timeout=([0-9]+)")
    set(timeout ${CMAKE_MATCH_1})
  endif()
  set(target ${kind}_${name})
  add_executable(${target} ${src} ${ARGN})
  target_link_libraries(${target} PRIVATE weft_internal m)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  if(WEFT_NCCL_LIBRARY)
    target_include_directories(${target} PRIVATE ${WEFT_NCCL_INCLUDE})
    target_link_libraries(${target} PRIVATE ${WEFT_NCCL_LIBRARY})
  endif()
  if(kind STREQUAL "cpu")
    add_test(NAME ${target} COMMAND ${target})
    set_tests_properties(${target} PROPERTIES TIMEOUT ${timeout} LABELS cpu SKIP_RETURN_CODE 77)
  elseif(ranks STREQUAL "driver")
    # The program starts its own jobs through weftrun (e.g. to check that a job fails).
    add_test(NAME ${target} COMMAND ${target} $<TARGET_FILE:weftrun>)
    set_tests_properties(${target} PROPERTIES TIMEOUT ${timeout} LABELS gpu SKIP_RETURN_CODE 77
      RUN_SERIAL TRUE
      ENVIRONMENT "${WEFT_GPU_TEST_ENV}")
  else()
    foreach(n IN LISTS ranks)
      weft_share_env(${n} env)
      add_test(NAME ${target}_np${n} COMMAND $<TARGET_FILE:weftrun> -n ${n} $<TARGET_FILE:${target}>)
      set_tests_properties(${target}_np${n} PROPERTIES TIMEOUT ${timeout} LABELS gpu
        SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
        ENVIRONMENT "${env}")
    endforeach()
  endif()
endfunction()
