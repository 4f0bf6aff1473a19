// The libprotobuf headers tzrec::config uses, read with the warnings they trip under our flags
// (-Wshadow in arena_impl.h, clang's -Wunused-parameter in port.h) silenced: they are found through
// an -I link (CMakeLists.txt) so they are not treated as system headers.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wextra"
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver_util.h>
#pragma GCC diagnostic pop
