import fc from 'fast-check';

/**
 * Property tests run from a fixed seed so `npm test` (and CI) gives the same verdict on every run.
 * Explore new inputs with `PRAZO_FC_SEED=random npm test` (or any number), and pin what it finds as a
 * plain example test.
 */
const requested = process.env.PRAZO_FC_SEED;
if (requested !== 'random') {
  const seed = requested === undefined ? 20_261_130 : Number(requested);
  if (Number.isSafeInteger(seed)) fc.configureGlobal({ seed });
}
