"""Data and figures behind the dashboard: pure functions returning DataFrames and plotly figures,
no streamlit import.

occurrences (corpora, a word's occurrences; lemmas: lemma-aware search) → vectors (per layer, or a
mix) → projection (PCA with explained variance, UMAP; alignment), clusters (KMeans/agglomerative, k
by silhouette), purity (sense separation per layer), neighbours (cosine kNN as KWIC lines),
corpus_index (nearest tokens of any word) → sense_plots (scatter with highlights, word-form view,
small multiples), projector_export; compare (two encoders on the same occurrences); layer_weights
(listener mixes of a saved pipeline, the shipped EWT example); attention (CoVe α: coverage, heatmap,
line view, HTML export); sense_probe + probe_plot (stratified 1-NN sense probe per layer).
"""
