// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord framing
// (tensorflow/core/lib/hash/crc32c.h), and its mask: a CRC of data that holds CRCs is weak, so
// TFRecords store `rotr(crc, 15) + 0xa282ead8`.

const TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32C of `bytes` (RFC 3720, appendix B.4: "123456789" gives 0xe3069283). */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** The masked CRC a TFRecord stores (tensorflow/core/lib/hash/crc32c.h, `Mask`). */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/**
 * One TFRecord: the length as little-endian uint64, the masked CRC of those 8 bytes, the data,
 * the masked CRC of the data (tensorflow/core/lib/io/record_writer.cc).
 */
export function tfRecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + 4 + data.length + 4);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(out.subarray(0, 8)), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskedCrc32c(data), true);
  return out;
}
