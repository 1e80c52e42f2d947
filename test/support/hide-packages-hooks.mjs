// Module resolution hooks for hide-packages.mjs: a hidden package resolves as a missing one does.
let hidden = [];

export async function initialize(data) {
  hidden = data.hidden;
}

export async function resolve(specifier, context, next) {
  if (hidden.some((name) => specifier === name || specifier.startsWith(`${name}/`))) {
    const error = new Error(`Cannot find package '${specifier}' imported from ${context.parentURL}`);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}
