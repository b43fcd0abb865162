// The one (empty) file of plab_test_pch and plab_ui_test_pch, the libraries that compile the
// suites' precompiled headers (tests/CMakeLists.txt).
