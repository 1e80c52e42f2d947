export {
  readParquetFile,
  writeParquetFile,
  encodeParquet,
  topLevelColumns,
  type ParquetTable,
  type ParquetSchemaElement,
} from './parquet-files';
export {
  RL_DATASET_SCHEMA,
  SFT_DATASET_SCHEMA,
  promptFromRlRow,
  readRlDataset,
  writeRlDataset,
  readSftDataset,
  writeSftDataset,
} from './datasets';
