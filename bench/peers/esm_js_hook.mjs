// A module-resolution hook for one file: tfjs-core 4.22's ESM build
// (dist/register_all_gradients.js, which registers the gradients that
// tf.train's optimizers need and that the CommonJS build leaves out)
// imports relative paths without their ".js", which Node's ESM loader does
// not resolve (nor its directory imports). This retries such a specifier
// with ".js" added (or "/index.js").
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    if (specifier.startsWith('.') && !specifier.endsWith('.js')) {
      if (err?.code === 'ERR_MODULE_NOT_FOUND' || err?.code === 'ERR_UNSUPPORTED_DIR_IMPORT') {
        try {
          return await next(specifier + '.js', context);
        } catch {
          return next(specifier + '/index.js', context);
        }
      }
    }
    throw err;
  }
}
