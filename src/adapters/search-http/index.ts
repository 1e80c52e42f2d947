export { createSearchR1Retriever, createVragImageSearch, createBraveWebSearch } from './search';
