"""Where every built-in method comes from: its paper and the authors' code.

Printed by ``zslbench list --method NAME`` (the ``methods`` plugin registers them through the
``zslbench_citations`` hook). They live here, not in each method's module, so that correcting a
citation changes no component's code digest and re-runs nothing.

Checked against the papers' arXiv, proceedings or publisher pages. ESZSL (PMLR) has neither a DOI
nor an arXiv version: its proceedings page stands in. DeViSE's DOI is the ACM Digital Library's
record of the NeurIPS 2013 proceedings. ALE, DeViSE and SJE have no code from their authors: the
harness follows their evaluation by Xian et al. (GBU, TPAMI 2019).
"""

from __future__ import annotations

from zslbench.methods import Citation

_BT_GP = {
    "authors": "Changkun Ye, Nick Barnes, Lars Petersson, Russell Tsuchida",
    "title": "Efficient Gaussian Process Model on Class-Imbalanced Datasets for Generalized "
    "Zero-Shot Learning",
    "venue": "ICPR",
    "year": 2022,
    "arxiv": "2210.06120",
    "code": "none found from the authors; zslbench's bt-gp is a re-implementation",
}
_GBU = (
    "as evaluated in Y. Xian, C. H. Lampert, B. Schiele, Z. Akata. Zero-Shot Learning - A "
    "Comprehensive Evaluation of the Good, the Bad and the Ugly. TPAMI 2019 (arXiv:1707.00600)"
)
_NO_CODE = "none released by the authors; zslbench follows the GBU evaluation"
_SAE = {
    "authors": "Elyor Kodirov, Tao Xiang, Shaogang Gong",
    "title": "Semantic Autoencoder for Zero-Shot Learning",
    "venue": "CVPR",
    "year": 2017,
    "arxiv": "1704.08345",
    "code": "https://github.com/Elyorcv/SAE",
}

CITATIONS = [
    # The paper's method and the ablations of its Table 3.
    Citation("bt-gp", **_BT_GP),  # type: ignore[arg-type]
    *(
        Citation(name, **_BT_GP, note="an ablation of the paper (Table 3)")  # type: ignore[arg-type]
        for name in ("t-gp", "gp", "krr", "bt-krr")
    ),
    Citation(
        "eszsl",
        authors="Bernardino Romera-Paredes, Philip H. S. Torr",
        title="An embarrassingly simple approach to zero-shot learning",
        venue="ICML",
        year=2015,
        url="https://proceedings.mlr.press/v37/romera-paredes15.html",
        code="https://github.com/bernard24/Embarrassingly-simple-ZSL",
    ),
    Citation("sae", **_SAE),  # type: ignore[arg-type]
    Citation("sae-s2v", **_SAE, note="the paper's semantic-to-visual (W^T) variant"),  # type: ignore[arg-type]
    Citation(
        "ale",
        authors="Zeynep Akata, Florent Perronnin, Zaid Harchaoui, Cordelia Schmid",
        title="Label-Embedding for Image Classification",
        venue="TPAMI",
        year=2016,
        arxiv="1503.08677",
        code=_NO_CODE,
        note=_GBU,
    ),
    Citation(
        "devise",
        authors="Andrea Frome, Greg S. Corrado, Jonathon Shlens, Samy Bengio, Jeffrey Dean, "
        "Marc'Aurelio Ranzato, Tomas Mikolov",
        title="DeViSE: A Deep Visual-Semantic Embedding Model",
        venue="NeurIPS",
        year=2013,
        doi="10.5555/2999792.2999849",
        code=_NO_CODE,
        note=_GBU,
    ),
    Citation(
        "sje",
        authors="Zeynep Akata, Scott Reed, Daniel Walter, Honglak Lee, Bernt Schiele",
        title="Evaluation of Output Embeddings for Fine-Grained Image Classification",
        venue="CVPR",
        year=2015,
        arxiv="1409.8403",
        code=_NO_CODE,
        note=_GBU,
    ),
    Citation(
        "cnzsl",
        authors="Ivan Skorokhodov, Mohamed Elhoseiny",
        title="Class Normalization for (Continual)? Generalized Zero-Shot Learning",
        venue="ICLR",
        year=2021,
        arxiv="2006.11328",
        code="https://github.com/universome/class-norm",
    ),
    Citation(
        "f-clswgan",
        authors="Yongqin Xian, Tobias Lorenz, Bernt Schiele, Zeynep Akata",
        title="Feature Generating Networks for Zero-Shot Learning",
        venue="CVPR",
        year=2018,
        arxiv="1712.00981",
        code="https://github.com/myaghmaei/f-CLSWGAN",
        note="the code link is a mirror of the authors' release on mpi-inf.mpg.de",
    ),
    Citation(
        "cada-vae",
        authors="Edgar Schönfeld, Sayna Ebrahimi, Samarth Sinha, Trevor Darrell, Zeynep Akata",
        title="Generalized Zero- and Few-Shot Learning via Aligned Variational Autoencoders",
        venue="CVPR",
        year=2019,
        arxiv="1812.01784",
        code="https://github.com/edgarschnfld/CADA-VAE-PyTorch",
    ),
    Citation(
        "tf-vaegan",
        authors="Sanath Narayan, Akshita Gupta, Fahad Shahbaz Khan, Cees G. M. Snoek, Ling Shao",
        title="Latent Embedding Feedback and Discriminative Features for Zero-Shot Classification",
        venue="ECCV",
        year=2020,
        arxiv="2003.07833",
        code="https://github.com/akshitac8/tfvaegan",
    ),
    Citation(
        "free",
        authors="Shiming Chen, Wenjie Wang, Beihao Xia, Qinmu Peng, Xinge You, Feng Zheng, "
        "Ling Shao",
        title="FREE: Feature Refinement for Generalized Zero-Shot Learning",
        venue="ICCV",
        year=2021,
        arxiv="2107.13807",
        code="https://github.com/shiming-chen/FREE",
    ),
    Citation(
        "ce-gzsl",
        authors="Zongyan Han, Zhenyong Fu, Shuo Chen, Jian Yang",
        title="Contrastive Embedding for Generalized Zero-Shot Learning",
        venue="CVPR",
        year=2021,
        arxiv="2103.16173",
        code="https://github.com/Hanzy1996/CE-GZSL",
    ),
    Citation(
        "hsva",
        authors="Shiming Chen, Guo-Sen Xie, Yang Liu, Qinmu Peng, Baigui Sun, Hao Li, Xinge You, "
        "Ling Shao",
        title="HSVA: Hierarchical Semantic-Visual Adaptation for Zero-Shot Learning",
        venue="NeurIPS",
        year=2021,
        arxiv="2109.15163",
        code="https://github.com/shiming-chen/HSVA",
    ),
    Citation(
        "sdgzsl",
        authors="Zhi Chen, Yadan Luo, Ruihong Qiu, Sen Wang, Zi Huang, Jingjing Li, Zheng Zhang",
        title="Semantics Disentangling for Generalized Zero-Shot Learning",
        venue="ICCV",
        year=2021,
        arxiv="2101.07978",
        code="https://github.com/uqzhichen/SDGZSL",
    ),
]
