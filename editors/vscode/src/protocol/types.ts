// The protocol's types, generated from schemas/.
export * from './types.generated';
