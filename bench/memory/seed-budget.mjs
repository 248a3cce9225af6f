/**
 * The retry budget of the project's source document (the sketch behind SPEC R1, see
 * docs/requirements.md; the document itself is not part of this repository), re-typed as it is, its
 * Portuguese names and all, to serve as the baseline prazo's budget is measured against. One timestamp per event in
 * two arrays, pruned with `shift()`: memory grows with the event rate (one number per event in the
 * window) and pruning a large array costs a copy of it. Not used by prazo; kept only for comparison.
 */
export const createSeedBudget = ({ janelaMs = 10000, razaoMaxima = 0.1, minimoPorSegundo = 3, agora }) => {
  const originais = [];
  const extras = [];

  const podar = (t) => {
    const corte = t - janelaMs;
    while (originais.length && originais[0] <= corte) originais.shift();
    while (extras.length && extras[0] <= corte) extras.shift();
  };

  return {
    registrarOriginal() {
      const t = agora();
      podar(t);
      originais.push(t);
    },

    tentarConsumir() {
      const t = agora();
      podar(t);

      const piso = (minimoPorSegundo * janelaMs) / 1000;
      const teto = Math.max(piso, originais.length * razaoMaxima);

      if (extras.length >= teto) return false;

      extras.push(t);
      return true;
    },

    estado() {
      const t = agora();
      podar(t);
      return {
        originais: originais.length,
        extras: extras.length,
        razao: originais.length ? extras.length / originais.length : 0,
      };
    },
  };
};
