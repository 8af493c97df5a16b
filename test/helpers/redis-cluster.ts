// Shared with the benchmarks: the code lives in support/ (bench/ does not import test/).
export * from '../../support/redis-cluster.ts';
