/* proto_index: the FileDescriptorProtos of the protos our servers speak
 * (the .proto files of proto/: evaluator, health, reflection v1 and v1alpha), embedded
 * at build time (protoc --descriptor_set_out, scripts/embed.sh), and the
 * lookups server reflection needs: a file by its name, the file that
 * declares a symbol, the services declared.
 *
 * The data is ours, built with the binary; the walker still checks every
 * length against the end of its buffer. Files are found by their name as
 * protoc knows it relative to proto/ ("evaluator.proto"). None of them
 * imports another, so a file is answered alone. */
#ifndef KRM_PROTO_INDEX_H
#define KRM_PROTO_INDEX_H

#include <stddef.h>
#include <stdint.h>

/* One serialized FileDescriptorProto, inside the embedded set. */
typedef struct proto_file {
    const uint8_t *data;
    size_t len;
} proto_file;

/* The file named name (exactly). 0, or -1 when there is none. */
int proto_file_by_name(const char *name, size_t name_len, proto_file *out);

/* The file declaring the fully-qualified symbol (no leading dot): a
 * message, field, oneof, enum, enum value (named in its enum's scope, as
 * protobuf scopes them), service, method or extension, nested at any
 * depth. Packages are not symbols (as in grpc-go). 0, or -1. */
int proto_file_by_symbol(const char *symbol, size_t symbol_len, proto_file *out);

#endif
