"""Data and figures behind the dashboard: pure functions returning DataFrames and plotly figures,
no streamlit import.

occurrences (corpora, a word's occurrences) → vectors (per layer, or the mix) → projection (PCA/UMAP),
clusters (KMeans/agglomerative, k by silhouette), neighbours (cosine kNN) → sense_plots,
projector_export; layer_weights (listener mixes of a saved pipeline); attention (CoVe α heatmap);
sense_probe + probe_plot (1-NN sense probe per layer).
"""
