// Arrow C++'s own check of a file's Bloom filters: a test harness that tests/support/arrow_cpp.py
// builds against the libparquet the pyarrow wheel ships; not part of the library.
//
// Reads the decryption keys from stdin (never argv): one line per key, "footer HEX" or
// "column DOTTED.PATH HEX" (data keys, already unwrapped by the caller; none for a plaintext
// file). Opens the file with Arrow C++'s Parquet reader, and for every row group and every leaf
// column whose chunk has a Bloom filter, reads the column's values with Arrow C++'s typed column
// reader (it decrypts and decodes the pages itself), hashes each value with the filter's own
// Hash() and asks FindHash(). Prints one JSON object per line:
//   {"row_group": R, "column": "path", "filter": true|false, "values": N, "missing": M}
// and exits 0; any Arrow/Parquet error is printed on stderr with exit 2.
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "parquet/api/reader.h"
#include "parquet/bloom_filter.h"
#include "parquet/bloom_filter_reader.h"
#include "arrow/util/secure_string.h"
#include "parquet/encryption/encryption.h"

namespace {

arrow::util::SecureString FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return arrow::util::SecureString(std::move(out));
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

template <typename Reader, typename Value, typename HashFn>
void CheckValues(parquet::ColumnReader* base, const parquet::BloomFilter& filter, HashFn hash,
                 int64_t* values, int64_t* missing) {
  auto* reader = static_cast<Reader*>(base);
  std::vector<Value> buffer(4096);
  std::vector<int16_t> def(4096), rep(4096);
  while (reader->HasNext()) {
    int64_t read = 0;
    int64_t levels = reader->ReadBatch(static_cast<int64_t>(buffer.size()), def.data(), rep.data(),
                                       buffer.data(), &read);
    (void)levels;
    for (int64_t i = 0; i < read; ++i) {
      ++*values;
      if (!filter.FindHash(hash(filter, buffer[i]))) ++*missing;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: arrow_bloom_check FILE < keys" << std::endl;
    return 2;
  }
  try {
    arrow::util::SecureString footer_key;
    bool have_footer_key = false;
    std::map<std::string, std::shared_ptr<parquet::ColumnDecryptionProperties>> column_keys;
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream in(line);
      std::string kind, a, b;
      in >> kind >> a >> b;
      if (kind == "footer") {
        footer_key = FromHex(a);
        have_footer_key = true;
      }
      if (kind == "column")
        column_keys[a] = parquet::ColumnDecryptionProperties::Builder(a).key(FromHex(b))->build();
    }
    parquet::ReaderProperties props = parquet::default_reader_properties();
    if (have_footer_key) {
      parquet::FileDecryptionProperties::Builder builder;
      builder.footer_key(footer_key);
      if (!column_keys.empty()) builder.column_keys(column_keys);
      props.file_decryption_properties(builder.build());
    }
    auto file = parquet::ParquetFileReader::OpenFile(argv[1], false, props);
    auto metadata = file->metadata();
    auto& filters = file->GetBloomFilterReader();
    for (int rg = 0; rg < metadata->num_row_groups(); ++rg) {
      auto rg_filters = filters.RowGroup(rg);
      auto row_group = file->RowGroup(rg);
      for (int col = 0; col < metadata->num_columns(); ++col) {
        const parquet::ColumnDescriptor* descr = metadata->schema()->Column(col);
        std::unique_ptr<parquet::BloomFilter> filter =
            rg_filters ? rg_filters->GetColumnBloomFilter(col) : nullptr;
        int64_t values = 0, missing = 0;
        if (filter) {
          auto reader = row_group->Column(col);
          const parquet::BloomFilter& f = *filter;
          switch (descr->physical_type()) {
            case parquet::Type::INT32:
              CheckValues<parquet::Int32Reader, int32_t>(
                  reader.get(), f, [](const parquet::BloomFilter& bf, int32_t v) { return bf.Hash(v); }, &values,
                  &missing);
              break;
            case parquet::Type::INT64:
              CheckValues<parquet::Int64Reader, int64_t>(
                  reader.get(), f, [](const parquet::BloomFilter& bf, int64_t v) { return bf.Hash(v); }, &values,
                  &missing);
              break;
            case parquet::Type::FLOAT:
              CheckValues<parquet::FloatReader, float>(
                  reader.get(), f, [](const parquet::BloomFilter& bf, float v) { return bf.Hash(v); }, &values,
                  &missing);
              break;
            case parquet::Type::DOUBLE:
              CheckValues<parquet::DoubleReader, double>(
                  reader.get(), f, [](const parquet::BloomFilter& bf, double v) { return bf.Hash(v); }, &values,
                  &missing);
              break;
            case parquet::Type::INT96:
              CheckValues<parquet::Int96Reader, parquet::Int96>(
                  reader.get(), f, [](const parquet::BloomFilter& bf, const parquet::Int96& v) { return bf.Hash(&v); },
                  &values, &missing);
              break;
            case parquet::Type::BYTE_ARRAY:
              CheckValues<parquet::ByteArrayReader, parquet::ByteArray>(
                  reader.get(), f,
                  [](const parquet::BloomFilter& bf, const parquet::ByteArray& v) { return bf.Hash(&v); }, &values,
                  &missing);
              break;
            case parquet::Type::FIXED_LEN_BYTE_ARRAY: {
              uint32_t len = static_cast<uint32_t>(descr->type_length());
              CheckValues<parquet::FixedLenByteArrayReader, parquet::FLBA>(
                  reader.get(), f,
                  [len](const parquet::BloomFilter& bf, const parquet::FLBA& v) { return bf.Hash(&v, len); },
                  &values, &missing);
              break;
            }
            default:
              break;
          }
        }
        std::cout << "{\"row_group\": " << rg << ", \"column\": " << JsonString(descr->path()->ToDotString())
                  << ", \"filter\": " << (filter ? "true" : "false") << ", \"values\": " << values
                  << ", \"missing\": " << missing << "}" << std::endl;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "arrow_bloom_check: " << e.what() << std::endl;
    return 2;
  }
  return 0;
}
