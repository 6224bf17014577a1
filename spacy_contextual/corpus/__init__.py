"""The corpus job: a file of sentences embedded into HDF5 in the layout of ``allennlp elmo``, sharded
between torchrun ranks and resumable after a kill (``job.embed_corpus``; the command line is
``spacy-contextual elmo`` / ``cove``). ``lines`` reads the corpus, ``folder`` owns OUTPUT.parts/, ``parts``
writes and assembles the parts."""
