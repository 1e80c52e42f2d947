// `npm run bench`: every benchmark, one JSON line per figure.
await import('./pipeline');
await import('./training');
await import('./sft');
await import('./llama');
export {};
