export { type Bucket, type BucketQuantile, bucketQuantile, normalizeBuckets } from './bucket-quantile.js';
export { type CsvOptions, parseCsv } from './csv.js';
export { detectFormat, type ReadSourceOptions, readLatencySource } from './detect.js';
export { type PrometheusOptions, parsePrometheus } from './prometheus.js';
export { parseSampleList } from './samples.js';
export { type LatencyDistribution, type LatencyUnit, SourceError, type SourceFormat } from './types.js';
