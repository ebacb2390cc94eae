// Arrow C++'s own BlockSplitBloomFilter timed on a values file: the Arrow C++ column of
// `secure-bloom bench` (secure_bloom/tools/arrow_cpp.py builds it against the libparquet and
// headers the pyarrow wheel ships; a benchmark peer, not part of the library).
//
// Usage: arrow_bloom_bench KIND PATH NUM_BYTES WARMUP REPS
//   KIND int64:  PATH holds little-endian int64 values back to back;
//   KIND string: PATH holds, per value, a uint32 LE byte length then the bytes (as BloomBench).
// Times, per value (median and best of REPS runs after WARMUP untimed ones):
//   hash:         Hashes() of every value into an array (Arrow's bulk hash);
//   hash_insert:  a fresh filter of NUM_BYTES, Hashes() then InsertHashes();
//   hash_check:   Hashes() then FindHash() of each hash in the filter holding every value.
// Prints one JSON object on stdout; exits 2 with a message on stderr for bad arguments or input.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "parquet/bloom_filter.h"
#include "parquet/types.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Figures {
  double median;
  double best;
};

template <typename F>
Figures Time(F&& run, int warmup, int reps, size_t n) {
  for (int i = 0; i < warmup; ++i) run();
  std::vector<double> ns;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    run();
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / static_cast<double>(n));
  }
  std::sort(ns.begin(), ns.end());
  return {ns[ns.size() / 2], ns.front()};
}

int Fail(const std::string& message) {
  std::cerr << "arrow_bloom_bench: " << message << std::endl;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) return Fail("usage: arrow_bloom_bench int64|string PATH NUM_BYTES WARMUP REPS");
  const std::string kind = argv[1];
  const long num_bytes = std::stol(argv[3]);
  const int warmup = std::stoi(argv[4]);
  const int reps = std::stoi(argv[5]);
  if (kind != "int64" && kind != "string") return Fail("KIND must be int64 or string");
  if (num_bytes < 32 || num_bytes > (128 << 20) || reps < 1 || warmup < 0) return Fail("bad NUM_BYTES/WARMUP/REPS");
  std::ifstream in(argv[2], std::ios::binary);
  if (!in) return Fail("cannot open the values file");
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  std::vector<int64_t> ints;
  std::vector<parquet::ByteArray> strings;
  if (kind == "int64") {
    if (raw.size() % 8 != 0) return Fail("an int64 file must hold a whole number of 8-byte values");
    ints.resize(raw.size() / 8);
    std::memcpy(ints.data(), raw.data(), raw.size());
  } else {
    size_t at = 0;
    while (at < raw.size()) {
      if (raw.size() - at < 4) return Fail("truncated length prefix");
      uint32_t len;
      std::memcpy(&len, raw.data() + at, 4);
      at += 4;
      if (raw.size() - at < len) return Fail("truncated value");
      strings.emplace_back(len, reinterpret_cast<const uint8_t*>(raw.data() + at));
      at += len;
    }
  }
  const size_t n = kind == "int64" ? ints.size() : strings.size();
  if (n == 0 || n > (1u << 30)) return Fail("no values, or too many");
  const int count = static_cast<int>(n);
  std::vector<uint64_t> hashes(n);

  parquet::BlockSplitBloomFilter probe_filter;
  auto hash_all = [&](const parquet::BlockSplitBloomFilter& f) {
    if (kind == "int64") {
      f.Hashes(ints.data(), count, hashes.data());
    } else {
      f.Hashes(strings.data(), count, hashes.data());
    }
  };
  probe_filter.Init(static_cast<uint32_t>(num_bytes));
  Figures hash = Time([&] { hash_all(probe_filter); }, warmup, reps, n);
  Figures insert = Time(
      [&] {
        parquet::BlockSplitBloomFilter f;
        f.Init(static_cast<uint32_t>(num_bytes));
        hash_all(f);
        f.InsertHashes(hashes.data(), count);
      },
      warmup, reps, n);
  hash_all(probe_filter);
  probe_filter.InsertHashes(hashes.data(), count);
  size_t found = 0;
  Figures check = Time(
      [&] {
        hash_all(probe_filter);
        size_t hits = 0;
        for (size_t i = 0; i < n; ++i) hits += probe_filter.FindHash(hashes[i]) ? 1 : 0;
        found = hits;
      },
      warmup, reps, n);
  std::cout << "{\"kind\": \"" << kind << "\", \"n\": " << n << ", \"num_bytes\": " << num_bytes
            << ", \"found\": " << found << ", \"ns_per_value\": {\"hash\": " << hash.median
            << ", \"hash_insert\": " << insert.median << ", \"hash_check\": " << check.median
            << "}, \"best_ns_per_value\": {\"hash\": " << hash.best << ", \"hash_insert\": " << insert.best
            << ", \"hash_check\": " << check.best << "}}" << std::endl;
  return 0;
}
