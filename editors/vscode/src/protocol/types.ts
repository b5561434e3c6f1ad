// The protocol's types: generated from schemas/, plus the contracts whose
// schemas have not landed yet.
export * from './types.generated';
export * from './contracts';
