"""Data and figures behind the dashboard: pure functions returning DataFrames and plotly figures,
no streamlit import.

models (load an encoder by kind and name; the one place the dashboard loads models) → occurrences
(corpora, a word's occurrences; lemmas: lemma-aware search) → occurrence_store (every layer's vectors
of the occurrences, one store per encoder and corpus, shared by every view) → vectors (per layer, or a
mix) → projection (PCA with explained variance, UMAP; alignment), clusters (KMeans/agglomerative, k
by silhouette), purity (sense separation per layer), neighbours (cosine kNN as KWIC lines),
layer_scores (every layer's score beside the majority-sense share), corpus_index (nearest tokens of
any word) → palette (colour-blind-safe colours and marks), sense_plots (scatter with highlights, word-form view,
small multiples), projector_export; compare (two encoders on the same occurrences); layer_weights
(listener mixes of a saved pipeline, the shipped EWT example); translation (one sentence through the MT
model, its <unk> copies named) and attention (CoVe α: coverage, row peaks and entropy, heatmap, line
view, HTML export); sense_probe + probe_plot (stratified 1-NN sense probe per layer).
"""
